import { OAUTH_SOCKET_SUBJECTS } from './connect';
import { EVENT_STREAM, EVENT_SUBJECTS } from './events';
import {
  FUNCTION_BUNDLE_SUBJECTS,
  FUNCTION_OUTPUT_BUCKET,
  FUNCTION_HOST_SUBJECTS,
  FUNCTIONS_SUBJECTS,
} from './functions';
import { ACTION_REPLY_BUCKET, FUNCTIONS_API_SUBJECTS } from './functions-api';
import { DEPLOY_PAYLOAD_BUCKET } from './function-deploy';
import { HEALTH_SUBJECT_PATTERN, healthSubject, SERVICE_NAMES, type ServiceName } from './health';
import { CONNECTIONS_API_SUBJECTS } from './connections-api';
import { ENVIRONMENT_VARIABLE_SUBJECTS } from './environment-variables';
import { AUTH_INTERNAL_SUBJECTS, VAULT_SUBJECTS } from './internal-auth';
import { PROVIDER_SUBJECTS } from './providers';
import { INTEGRATION_SUBJECTS } from './integrations';

/**
 * Who may do what on NATS: the one source of truth for the NATS server's users and their subject
 * permissions (rendered into `infra/nats/nats.conf` by `scripts/lib/nats-config.mjs`, used by compose,
 * `npm start` and `npm test`). Each service connects as its own user; the process that hosts untrusted
 * code (functions-runtime) gets only the subjects its host calls need.
 *
 * To let a service call a new subject of a context it already calls, nothing changes (grants are per
 * context prefix, `vault.v1.>`); a new context, a new durable consumer or a new object store bucket is
 * one line here, then `pnpm nats:config` rewrites the server configuration.
 */

/** The durable JetStream consumers on the event stream, by the service that reads with them. */
export const EVENT_CONSUMERS = {
  relayAuth: 'webhook-relay-auth',
  relayProviderWebhook: 'webhook-relay-provider-webhook',
  relaySync: 'webhook-relay-sync',
  relayAsyncAction: 'webhook-relay-async-action',
  orchestratorAuth: 'sync-orchestrator-auth',
  orchestratorIntegrations: 'sync-orchestrator-integrations',
  orchestratorConnections: 'sync-orchestrator-connections',
  orchestratorSyncWebhook: 'sync-orchestrator-sync-webhook',
} as const;

/** A NATS user: one per service, the orchestrator's Temporal worker, and `admin` (tests and tooling). */
export const NATS_USERS = [...SERVICE_NAMES, 'sync-orchestrator-worker', 'admin'] as const;
export type NatsUser = (typeof NATS_USERS)[number];

export interface NatsGrant {
  /** Request subjects the user answers (its queue group is its service name); its health subject is added. */
  serves: readonly string[];
  /** Request subjects it sends; replies come back on its own inbox (`_INBOX.<user>.>`). */
  calls: readonly string[];
  /** Broadcasts it subscribes to (plain subscriptions, no reply). */
  listens: readonly string[];
  /** Broadcasts it publishes. */
  announces: readonly string[];
  /** Event subjects it publishes to the JetStream event stream. */
  publishesEvents: readonly string[];
  /** Durable consumers (EVENT_CONSUMERS) it reads the event stream with. */
  consumesEvents: readonly string[];
  /** Creates the event stream and moves its budget at boot (`ensureEventStream`). */
  managesEventStream: boolean;
  /** JetStream object store buckets it puts, gets or deletes objects in. */
  buckets: readonly string[];
}

const none: NatsGrant = {
  serves: [],
  calls: [],
  listens: [],
  announces: [],
  publishesEvents: [],
  consumesEvents: [],
  managesEventStream: false,
  buckets: [],
};

/** A whole context's request subjects (`auth.v1.>`): its new subjects need no change here. */
const context = (name: 'auth' | 'vault' | 'relay' | 'orchestrator' | 'functions') => `${name}.v1.>`;

const orchestratorCalls = [context('functions'), context('auth'), context('vault')];

/** The services' grants; `admin` may do anything and is not listed. */
export const NATS_GRANTS: Record<Exclude<NatsUser, 'admin'>, NatsGrant> = {
  // The public edge: calls every context on behalf of the API key it verified, and every health subject.
  gateway: {
    ...none,
    calls: [
      context('auth'),
      context('vault'),
      context('relay'),
      context('orchestrator'),
      HEALTH_SUBJECT_PATTERN,
    ],
    // The embedded proxy engine drops cached credentials when a connection changes; each replica hears
    // the claims and results of the @nangohq/frontend WebSockets it holds, and sends them to the others'.
    listens: [VAULT_SUBJECTS.changed, OAUTH_SOCKET_SUBJECTS.all],
    announces: [OAUTH_SOCKET_SUBJECTS.all],
    // The embedded webhook ingress stores verified provider webhooks (the relay delivers them).
    publishesEvents: [EVENT_SUBJECTS.providerWebhook],
    buckets: [DEPLOY_PAYLOAD_BUCKET, ACTION_REPLY_BUCKET],
  },
  'auth-connect': {
    ...none,
    serves: [context('auth')],
    // Its flows resolve integrations through its own subjects; it stores connections in the vault and
    // has new ones checked by validate-connection scripts (orchestrator).
    calls: [context('auth'), context('vault'), context('orchestrator')],
    // A refused reconnect's failed auth event; an integration's deletion (its functions and syncs go).
    publishesEvents: [EVENT_SUBJECTS.auth, EVENT_SUBJECTS.integration],
  },
  'connections-vault': {
    ...none,
    serves: [context('vault')],
    // Token refresh and integration lookups (auth); validate-connection scripts before an import is
    // stored and pre-connection-deletion scripts (orchestrator).
    calls: [context('auth'), context('orchestrator')],
    announces: [VAULT_SUBJECTS.changed],
    // Auth events (refreshes, imports) and connection deletions.
    publishesEvents: [EVENT_SUBJECTS.auth, EVENT_SUBJECTS.connection],
    managesEventStream: true,
  },
  // No database: NATS permissions are its only boundary, so exact subjects.
  proxy: {
    ...none,
    calls: [AUTH_INTERNAL_SUBJECTS.resolveIntegration, VAULT_SUBJECTS.credentials],
    listens: [VAULT_SUBJECTS.changed],
  },
  // Hosts untrusted function code: exactly the subjects of its host calls (src/host/host-calls.ts), nothing
  // that stores connections, refreshes tokens, reads integration secrets or deploys code.
  'functions-runtime': {
    ...none,
    serves: [context('functions')],
    calls: [
      CONNECTIONS_API_SUBJECTS.get,
      VAULT_SUBJECTS.credentials,
      CONNECTIONS_API_SUBJECTS.setMetadata,
      CONNECTIONS_API_SUBJECTS.updateMetadata,
      PROVIDER_SUBJECTS.get,
      // nango.getIntegration(): the run's own integration (the runtime names it, never the script).
      INTEGRATION_SUBJECTS.get,
      ENVIRONMENT_VARIABLE_SUBJECTS.list,
      FUNCTION_HOST_SUBJECTS.checkpointGet,
      FUNCTION_HOST_SUBJECTS.checkpointSave,
      FUNCTION_HOST_SUBJECTS.checkpointClear,
      FUNCTION_HOST_SUBJECTS.actionTrigger,
      FUNCTION_HOST_SUBJECTS.lockAcquire,
      FUNCTION_HOST_SUBJECTS.lockRelease,
      FUNCTION_HOST_SUBJECTS.lockReleaseAll,
      // A bundle the runtime does not hold yet, by its hash.
      FUNCTION_BUNDLE_SUBJECTS.get,
      // A sync's records and the sync controls a script may use.
      'orchestrator.v1.records.>',
      'orchestrator.v1.sync.>',
    ],
    // Every replica hears a cancelled run's stop and the runs' lease renewals (only the one running the
    // script acts on them, and answers a renewal: allow_responses).
    listens: [FUNCTIONS_SUBJECTS.cancel, FUNCTIONS_SUBJECTS.lease],
    buckets: [FUNCTION_OUTPUT_BUCKET],
  },
  'sync-orchestrator': {
    ...none,
    serves: [context('orchestrator')],
    calls: orchestratorCalls,
    // Cached action look-ups: dropped when a replica changes functions or the vault changes a connection.
    listens: [FUNCTIONS_API_SUBJECTS.changed, VAULT_SUBJECTS.changed],
    // Synchronous actions and on-event scripts renew their script's lease (asking the runtime replica
    // running it to confirm), and stop a script whose replica stopped confirming.
    announces: [FUNCTIONS_API_SUBJECTS.changed, FUNCTIONS_SUBJECTS.cancel, FUNCTIONS_SUBJECTS.lease],
    publishesEvents: [EVENT_SUBJECTS.sync, EVENT_SUBJECTS.asyncAction],
    consumesEvents: [
      EVENT_CONSUMERS.orchestratorAuth,
      EVENT_CONSUMERS.orchestratorIntegrations,
      EVENT_CONSUMERS.orchestratorConnections,
      EVENT_CONSUMERS.orchestratorSyncWebhook,
    ],
    managesEventStream: true,
    buckets: [FUNCTION_OUTPUT_BUCKET, DEPLOY_PAYLOAD_BUCKET, ACTION_REPLY_BUCKET],
  },
  // The Temporal worker answers nothing over NATS; its activities run invocations and publish their events.
  'sync-orchestrator-worker': {
    ...none,
    calls: orchestratorCalls,
    // A cancelled sync run's activity tells functions-runtime to stop its script; a running sync run or
    // async action renews its script's lease (the replica running it confirms each renewal).
    announces: [FUNCTIONS_SUBJECTS.cancel, FUNCTIONS_SUBJECTS.lease],
    publishesEvents: [EVENT_SUBJECTS.sync, EVENT_SUBJECTS.asyncAction],
    buckets: [FUNCTION_OUTPUT_BUCKET, ACTION_REPLY_BUCKET],
  },
  'webhook-relay': {
    ...none,
    serves: [context('relay')],
    // Routing (auth, vault) and on-webhook functions (orchestrator).
    calls: [context('auth'), context('vault'), context('orchestrator')],
    // Cached routing (connections) and sync webhook subscriptions (functions) are dropped when they change.
    listens: [VAULT_SUBJECTS.changed, FUNCTIONS_API_SUBJECTS.changed],
    // Provider webhooks it stored, and those routed to syncs' onWebhook handlers.
    publishesEvents: [EVENT_SUBJECTS.providerWebhook, EVENT_SUBJECTS.syncWebhook],
    consumesEvents: [
      EVENT_CONSUMERS.relayAuth,
      EVENT_CONSUMERS.relayProviderWebhook,
      EVENT_CONSUMERS.relaySync,
      EVENT_CONSUMERS.relayAsyncAction,
    ],
    managesEventStream: true,
  },
};

/** The inbox prefix a user's client must use (nats.js `inboxPrefix`): its replies arrive only there. */
export const natsInboxPrefix = (user: string): string => `_INBOX.${user}`;

export interface NatsPermissions {
  publish: string[];
  subscribe: string[];
}

/** The JetStream API and data subjects of an object store bucket (nats.js object store, stream `OBJ_<bucket>`). */
function bucketSubjects(bucket: string): string[] {
  const stream = `OBJ_${bucket}`;
  return [
    `$JS.API.STREAM.*.${stream}`,
    `$JS.API.STREAM.MSG.GET.${stream}`,
    `$JS.API.DIRECT.GET.${stream}`,
    `$JS.API.DIRECT.GET.${stream}.>`,
    `$JS.API.CONSUMER.*.${stream}`,
    `$JS.API.CONSUMER.*.${stream}.>`,
    `$JS.FC.${stream}.>`,
    // Reading an object looks its stream up by subject.
    '$JS.API.STREAM.NAMES',
    `$O.${bucket}.>`,
  ];
}

/**
 * The publish and subscribe allow-lists of a service's user. Replies to requests it serves are allowed by
 * the server's `allow_responses` (one reply per request received), never by a publish grant on `_INBOX`.
 */
export function natsPermissions(user: Exclude<NatsUser, 'admin'>): NatsPermissions {
  const grant = NATS_GRANTS[user];
  const service = (SERVICE_NAMES as readonly string[]).includes(user) ? (user as ServiceName) : undefined;
  const stream = EVENT_STREAM.name;
  const usesJetStream =
    grant.publishesEvents.length + grant.consumesEvents.length + grant.buckets.length > 0 ||
    grant.managesEventStream;
  const publish = [
    ...grant.calls,
    ...grant.announces,
    ...grant.publishesEvents,
    ...(usesJetStream ? ['$JS.API.INFO'] : []),
    ...(grant.managesEventStream
      ? [
          `$JS.API.STREAM.INFO.${stream}`,
          `$JS.API.STREAM.CREATE.${stream}`,
          `$JS.API.STREAM.UPDATE.${stream}`,
        ]
      : []),
    ...grant.consumesEvents.flatMap((durable) => [
      `$JS.API.CONSUMER.*.${stream}.${durable}`,
      `$JS.API.CONSUMER.*.${stream}.${durable}.>`,
      `$JS.API.CONSUMER.DURABLE.CREATE.${stream}.${durable}`,
      `$JS.API.CONSUMER.MSG.NEXT.${stream}.${durable}`,
      // Acks, and `working()` extensions, which a one-reply allowance would refuse.
      `$JS.ACK.${stream}.${durable}.>`,
    ]),
    ...grant.buckets.flatMap(bucketSubjects),
  ];
  const subscribe = [
    ...grant.serves,
    ...(service ? [healthSubject(service)] : []),
    ...grant.listens,
    `${natsInboxPrefix(user)}.>`,
  ];
  return { publish: [...new Set(publish)], subscribe: [...new Set(subscribe)] };
}

/** The environment variable holding a user's password on the NATS server side (`NATS_PASSWORD_SYNC_ORCHESTRATOR`). */
export const natsPasswordVariable = (user: NatsUser): string =>
  `NATS_PASSWORD_${user.toUpperCase().replaceAll('-', '_')}`;

export interface NatsServerConfigOptions {
  /**
   * Treat clients that present no credentials as this user (nats-server `no_auth_user`). Only for the
   * private server of `npm test`, so tests and tools that connect without credentials act as `admin`;
   * never in a deployment, where a client without credentials must be refused.
   */
  noAuthUser?: NatsUser;
}

/** The largest message the generated server configuration accepts (nats-server's recommended ceiling). */
export const NATS_MAX_PAYLOAD_BYTES = 8 * 1024 * 1024;

/**
 * How long a service may take to answer a request it received. `allow_responses: true` alone means one
 * reply within nats-server's default of 2 minutes: a sync run (`functions.v1.run`, up to 24 h of wall
 * clock, FUNCTIONS_SYNC_WALL_LIMIT_MS) or a synchronous action (15 min) that took longer could not answer
 * (the reply was refused as a permissions violation and the caller waited for its timeout). Still one
 * reply per request received, and only on the requester's reply subject.
 */
export const NATS_RESPONSE_EXPIRES = '25h';

const quote = (subject: string) => JSON.stringify(subject);
const list = (subjects: readonly string[], indent: string) =>
  `[\n${subjects.map((s) => `${indent}  ${quote(s)}`).join('\n')}\n${indent}]`;

/**
 * The NATS server configuration (`authorization` block) for every user in NATS_USERS. Passwords are not
 * in it: each is read from the server's environment (`$NATS_PASSWORD_<USER>`), so the file holds no
 * secret and the server refuses to start when one is missing. Ports, JetStream and storage come from
 * the server's command line.
 */
export function renderNatsServerConfig(options: NatsServerConfigOptions = {}): string {
  const users = NATS_USERS.map((user) => {
    const head = `    {\n      user: ${quote(user)}\n      password: $${natsPasswordVariable(user)}`;
    if (user === 'admin') return `${head}\n    }`;
    const { publish, subscribe } = natsPermissions(user);
    return (
      `${head}\n      permissions: {\n` +
      `        publish: { allow: ${list(publish, '        ')} }\n` +
      `        subscribe: { allow: ${list(subscribe, '        ')} }\n` +
      // Lets a service answer each request it received once, on the requester's own reply subject.
      `        allow_responses: { max: 1, expires: ${quote(NATS_RESPONSE_EXPIRES)} }\n      }\n    }`
    );
  });
  return [
    '# Generated from packages/contracts/src/nats-permissions.ts by `pnpm nats:config`: do not edit by hand.',
    '# One user per service; each password comes from the NATS server environment (NATS_PASSWORD_<USER>).',
    'authorization {',
    `  users = [\n${users.join('\n')}\n  ]`,
    '}',
    // NATS's default is 1 MB; a page of records (GET /records, limit up to 10000) then takes several
    // round trips. Services size their messages from what the server they joined announces.
    `max_payload: ${NATS_MAX_PAYLOAD_BYTES}`,
    ...(options.noAuthUser ? [`no_auth_user: ${quote(options.noAuthUser)}`] : []),
    '',
  ].join('\n');
}
