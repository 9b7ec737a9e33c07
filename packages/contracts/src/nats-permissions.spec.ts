import * as contracts from './index';
import { SERVICE_NAMES } from './health';
import { natsSubjectOwner } from './nats-request';
import { NATS_REQUESTS, natsRequestsServedBy } from './nats-requests';
import {
  NATS_GRANTS,
  NATS_USERS,
  natsPermissions,
  renderNatsServerConfig,
  type NatsUser,
} from './nats-permissions';

/** NATS subject matching: `*` is one token, `>` one or more at the end. */
function matches(pattern: string, subject: string): boolean {
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '>') return s.length > i;
    if (i >= s.length || (p[i] !== '*' && p[i] !== s[i])) return false;
  }
  return p.length === s.length;
}
const services = NATS_USERS.filter((u): u is Exclude<NatsUser, 'admin'> => u !== 'admin');
const may = (user: Exclude<NatsUser, 'admin'>, op: 'publish' | 'subscribe', subject: string) =>
  natsPermissions(user)[op].some((pattern) => matches(pattern, subject));

/** Every request subject the contracts define (`<context>.v<N>.…` values of the `*_SUBJECTS` objects). */
const requestSubjects = Object.entries(contracts)
  .filter(([name, value]) => name.endsWith('_SUBJECTS') && typeof value === 'object' && value !== null)
  .flatMap(([, value]) => Object.values(value as Record<string, unknown>))
  .filter((v): v is string => typeof v === 'string' && !v.startsWith('events.'));

describe('NATS permissions', () => {
  it('has exactly one service answering each request subject of the contracts', () => {
    expect(requestSubjects.length).toBeGreaterThan(50);
    const orphans = requestSubjects.filter(
      (subject) => services.filter((user) => may(user, 'subscribe', subject)).length !== 1,
    );
    // The two broadcasts: their owner publishes, several services listen.
    expect(orphans.sort()).toEqual(
      [contracts.VAULT_SUBJECTS.changed, contracts.FUNCTIONS_API_SUBJECTS.changed].sort(),
    );
  });

  it('lets functions-runtime call only what its host calls need', () => {
    for (const subject of [
      contracts.VAULT_SUBJECTS.credentials,
      contracts.CONNECTIONS_API_SUBJECTS.get,
      contracts.CONNECTIONS_API_SUBJECTS.setMetadata,
      contracts.FUNCTION_HOST_SUBJECTS.checkpointSave,
      contracts.FUNCTION_HOST_SUBJECTS.actionTrigger,
      contracts.ENVIRONMENT_VARIABLE_SUBJECTS.list,
      contracts.PROVIDER_SUBJECTS.get,
    ])
      expect([subject, may('functions-runtime', 'publish', subject)]).toEqual([subject, true]);
    for (const subject of [
      contracts.AUTH_INTERNAL_SUBJECTS.resolveIntegration,
      contracts.AUTH_INTERNAL_SUBJECTS.refresh,
      contracts.VAULT_SUBJECTS.store,
      contracts.CONNECTIONS_API_SUBJECTS.import,
      contracts.API_KEY_SUBJECTS.create,
      contracts.DEPLOY_SUBJECTS.apply,
      contracts.WEBHOOK_SUBJECTS.getSettings,
      contracts.EVENT_SUBJECTS.auth,
      '$JS.API.STREAM.DELETE.SWITCHBOARD_EVENTS',
      '_INBOX.gateway.abc',
    ])
      expect([subject, may('functions-runtime', 'publish', subject)]).toEqual([subject, false]);
  });

  it('gives each user its own inbox and no other', () => {
    for (const user of services) {
      expect(may(user, 'subscribe', `_INBOX.${user}.x.y`)).toBe(true);
      for (const other of services.filter((o) => o !== user))
        expect([user, other, may(user, 'subscribe', `_INBOX.${other}.x.y`)]).toEqual([user, other, false]);
      expect(natsPermissions(user).publish.some((p) => p.startsWith('_INBOX'))).toBe(false);
    }
  });

  it('publishes each event subject from its owners only, and from the gateway only verified provider webhooks', () => {
    const publishers = (subject: string) => services.filter((u) => may(u, 'publish', subject));
    // auth-connect: a refused reconnect's failed event; the vault: creations, overrides, refresh failures.
    expect(publishers(contracts.EVENT_SUBJECTS.auth)).toEqual(['auth-connect', 'connections-vault']);
    expect(publishers(contracts.EVENT_SUBJECTS.integration)).toEqual(['auth-connect']);
    // The gateway's embedded ingress (the default) and the relay's (remote mode) store verified webhooks.
    expect(publishers(contracts.EVENT_SUBJECTS.providerWebhook)).toEqual(['gateway', 'webhook-relay']);
    for (const subject of Object.values(contracts.EVENT_SUBJECTS))
      if (subject !== contracts.EVENT_SUBJECTS.providerWebhook)
        expect([subject, may('gateway', 'publish', subject)]).toEqual([subject, false]);
    expect(publishers(contracts.EVENT_SUBJECTS.syncWebhook)).toEqual(['webhook-relay']);
    expect(publishers(contracts.EVENT_SUBJECTS.sync)).toEqual([
      'sync-orchestrator',
      'sync-orchestrator-worker',
    ]);
  });

  it('scopes JetStream consumers to their own durables', () => {
    const next = (durable: string) => `$JS.API.CONSUMER.MSG.NEXT.SWITCHBOARD_EVENTS.${durable}`;
    expect(may('webhook-relay', 'publish', next(contracts.EVENT_CONSUMERS.relayAuth))).toBe(true);
    expect(may('webhook-relay', 'publish', next(contracts.EVENT_CONSUMERS.orchestratorAuth))).toBe(false);
    expect(
      may('sync-orchestrator', 'publish', `$JS.API.CONSUMER.DELETE.SWITCHBOARD_EVENTS.webhook-relay-auth`),
    ).toBe(false);
    for (const user of services.filter((u) => NATS_GRANTS[u].buckets.length === 0))
      expect([user, may(user, 'publish', '$O.function-outputs.C.x')]).toEqual([user, false]);
  });

  it('renders every user, passwords as server variables, anonymous access only when asked', () => {
    const conf = renderNatsServerConfig();
    for (const user of NATS_USERS) expect(conf).toContain(`user: "${user}"`);
    expect(conf).toContain('password: $NATS_PASSWORD_SYNC_ORCHESTRATOR_WORKER');
    expect(conf).not.toContain('no_auth_user');
    // One reply per request, for as long as the longest run may take (the server's default is 2 minutes).
    expect(conf.match(/allow_responses: \{ max: 1, expires: "25h" \}/g)).toHaveLength(NATS_USERS.length - 1);
    expect(renderNatsServerConfig({ noAuthUser: 'admin' })).toMatch(/^no_auth_user: "admin"$/m);
  });
});

describe('NATS request definitions', () => {
  it('define each request subject once, keeping the subject strings', () => {
    const defined = NATS_REQUESTS.map((def) => def.subject);
    expect(new Set(defined).size).toBe(defined.length);
    // Broadcasts (every replica hears them; a lease renewal is answered by the one running the script)
    // and the records page (a raw reply with its own framing) are not request/reply to one service.
    const undefinedSubjects = requestSubjects.filter((subject) => !defined.includes(subject));
    expect(undefinedSubjects.sort()).toEqual(
      [
        contracts.VAULT_SUBJECTS.changed,
        contracts.FUNCTIONS_API_SUBJECTS.changed,
        contracts.FUNCTIONS_SUBJECTS.cancel,
        contracts.FUNCTIONS_SUBJECTS.lease,
        contracts.OAUTH_SOCKET_SUBJECTS.all,
        contracts.RECORDS_SUBJECTS.list,
      ].sort(),
    );
    expect(defined.filter((subject) => !requestSubjects.includes(subject))).toEqual([]);
  });

  it('give every subject an owner whose NATS user may answer it, and only that one', () => {
    for (const def of NATS_REQUESTS) {
      const owner = natsSubjectOwner(def.subject);
      expect({ subject: def.subject, owner }).toEqual({ subject: def.subject, owner: expect.any(String) });
      const answering = SERVICE_NAMES.filter((user) => may(user, 'subscribe', def.subject));
      expect({ subject: def.subject, answering }).toEqual({ subject: def.subject, answering: [owner] });
    }
  });

  it('serve, for each service, exactly the contexts it owns', () => {
    for (const service of SERVICE_NAMES) {
      const contexts = new Set(
        natsRequestsServedBy(service).map((def) => `${def.subject.split('.')[0]}.v1.>`),
      );
      expect({ service, serves: [...NATS_GRANTS[service].serves].sort() }).toEqual({
        service,
        serves: [...contexts].sort(),
      });
    }
  });
});
