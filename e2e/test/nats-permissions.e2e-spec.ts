import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import {
  AUTH_INTERNAL_SUBJECTS,
  CONNECTIONS_API_SUBJECTS,
  DEPLOY_SUBJECTS,
  EVENT_STREAM,
  EVENT_SUBJECTS,
  VAULT_SUBJECTS,
  natsInboxPrefix,
  type NatsUser,
} from '@switchboard/contracts';
import {
  freePort,
  repoRoot,
  startAuthenticatedNats,
  startStack,
  withoutNatsSecrets,
  type AuthenticatedNats,
  type Stack,
} from '@switchboard/testing';
import { connect, type Msg, type NatsConnection, type Subscription } from 'nats';
import { Client } from 'pg';
import { call } from './support/http';
import { START_HOOK_TIMEOUT_MS, STACK_READY_TIMEOUT_MS } from './support/processes';

/**
 * The NATS server as deployments run it (infra/nats/nats.conf: one user per service, subject allow-lists,
 * no anonymous clients) under a whole stack. A process holding one service's credentials (functions-runtime,
 * where untrusted code runs; the gateway, the public edge) tries what its user may not do: the server
 * refuses it with a permissions violation and nothing reaches the service that would have answered.
 */

const packet = (subject: string, data: unknown) =>
  Buffer.from(JSON.stringify({ pattern: subject, data, id: randomUUID() }));

/** Resolves with the error a subscription ended with (the server refused it), or undefined when it got messages. */
async function subscriptionOutcome(sub: Subscription, received: Msg[]): Promise<Error | undefined> {
  try {
    for await (const m of sub) received.push(m);
    return undefined;
  } catch (error) {
    return error as Error;
  }
}

describe('NATS users and subject permissions', () => {
  let nats: AuthenticatedNats;
  let stack: Stack;
  let db: Client;
  let environmentId: number;
  const connections: NatsConnection[] = [];
  const integration = `github-${randomUUID().slice(0, 8)}`;
  const clientSecret = `secret-${randomUUID()}`;

  /** A connection holding `user`'s credentials, as a compromised process of that service would. */
  const as = async (user: NatsUser): Promise<NatsConnection> => {
    const nc = await connect({
      servers: nats.url,
      user,
      pass: nats.passwords[user],
      inboxPrefix: natsInboxPrefix(user),
    });
    connections.push(nc);
    return nc;
  };
  /** Records every message published on `subject` (admin may see everything). */
  const monitor = async (subject: string): Promise<Msg[]> => {
    const seen: Msg[] = [];
    const admin = await as('admin');
    admin.subscribe(subject, { callback: (_err, m) => seen.push(m) });
    await admin.flush();
    return seen;
  };

  beforeAll(async () => {
    nats = await startAuthenticatedNats();
    stack = await startStack({
      nats: { url: nats.url, passwords: nats.passwords },
      readyTimeoutMs: STACK_READY_TIMEOUT_MS,
    });
    db = new Client({ connectionString: stack.databaseUrl });
    await db.connect();
    const { rows } = await db.query<{ id: number }>('SELECT id FROM auth.environments WHERE uuid = $1', [
      stack.environmentUuid,
    ]);
    environmentId = rows[0]!.id;
    const created = await call(stack.gatewayUrl, 'POST', '/integrations', {
      key: stack.secretKey,
      body: {
        provider: 'github',
        unique_key: integration,
        credentials: { type: 'OAUTH2', client_id: 'client-id', client_secret: clientSecret },
      },
    });
    expect(created.status).toBe(200);
  }, START_HOOK_TIMEOUT_MS);

  afterAll(async () => {
    await Promise.all(connections.map((nc) => nc.close()));
    await db?.end();
    await stack?.stop();
    await nats?.stop();
  });

  it('runs every service as its own user: the API answers through auth-connect, the vault and the relay', async () => {
    const ready = await call(stack.gatewayUrl, 'GET', '/ready', { key: stack.secretKey });
    expect(ready.status).toBe(200);
    const listed = await call(stack.gatewayUrl, 'GET', '/connections', { key: stack.secretKey });
    expect(listed).toMatchObject({ status: 200, body: { connections: [] } });
    const deliveries = await call(stack.gatewayUrl, 'GET', '/environment/webhook-deliveries', {
      key: stack.secretKey,
    });
    expect(deliveries.status).toBe(200);
    // Booting, readiness, the event consumers and these calls stayed inside every user's allow-lists.
    expect(nats.logs()).not.toMatch(/Violation/);
  });

  it('refuses functions-runtime a request for an integration client secret, which the proxy gets', async () => {
    const seen = await monitor(AUTH_INTERNAL_SUBJECTS.resolveIntegration);
    const request = { environmentId, uniqueKey: integration };

    const runtime = await as('functions-runtime');
    await expect(
      runtime.request(
        AUTH_INTERNAL_SUBJECTS.resolveIntegration,
        packet(AUTH_INTERNAL_SUBJECTS.resolveIntegration, request),
        { timeout: 5000 },
      ),
    ).rejects.toMatchObject({ code: 'PERMISSIONS_VIOLATION' });
    expect(seen).toHaveLength(0);

    // The same request from a user allowed to make it is answered with the secret.
    const proxy = await as('proxy');
    const reply = await proxy.request(
      AUTH_INTERNAL_SUBJECTS.resolveIntegration,
      packet(AUTH_INTERNAL_SUBJECTS.resolveIntegration, request),
      { timeout: 5000 },
    );
    expect(JSON.parse(Buffer.from(reply.data).toString('utf8'))).toMatchObject({
      response: { ok: true, data: { clientSecret } },
    });
    expect(seen).toHaveLength(1);
  });

  it('refuses functions-runtime the vault and auth subjects its host calls do not use', async () => {
    const runtime = await as('functions-runtime');
    const forbidden = [
      AUTH_INTERNAL_SUBJECTS.refresh,
      VAULT_SUBJECTS.store,
      VAULT_SUBJECTS.match,
      CONNECTIONS_API_SUBJECTS.list,
      CONNECTIONS_API_SUBJECTS.import,
      'auth.v1.api-key.create',
      DEPLOY_SUBJECTS.apply,
      'relay.v1.webhook-settings.get',
    ];
    const seen = await monitor('>');
    for (const subject of forbidden) {
      await expect(
        runtime.request(subject, packet(subject, { environmentId }), { timeout: 5000 }),
      ).rejects.toMatchObject({ code: 'PERMISSIONS_VIOLATION' });
    }
    expect(seen.filter((m) => forbidden.includes(m.subject))).toEqual([]);
  });

  it("refuses functions-runtime other services' request subjects and reply inboxes", async () => {
    const runtime = await as('functions-runtime');
    const stolen: Msg[] = [];
    // Answering the vault's credential requests in its queue group, or reading the gateway's replies.
    const outcomes = [
      subscriptionOutcome(
        runtime.subscribe(VAULT_SUBJECTS.credentials, { queue: 'connections-vault' }),
        stolen,
      ),
      subscriptionOutcome(runtime.subscribe(`${natsInboxPrefix('gateway')}.>`), stolen),
      subscriptionOutcome(runtime.subscribe('_INBOX.>'), stolen),
      subscriptionOutcome(runtime.subscribe('>'), stolen),
    ];
    // Traffic the subscriptions would have seen: the gateway asks the vault and gets replies.
    const listed = await call(stack.gatewayUrl, 'GET', '/connections', { key: stack.secretKey });
    expect(listed.status).toBe(200);
    const errors = await Promise.all(outcomes);
    for (const error of errors) expect(error).toMatchObject({ code: 'PERMISSIONS_VIOLATION' });
    expect(stolen).toEqual([]);
  });

  it('refuses the gateway a publish to the event stream beyond the provider webhooks it verified', async () => {
    const admin = await as('admin');
    const jsm = await admin.jetstreamManager();
    const before = (await jsm.streams.info(EVENT_STREAM.name)).state.messages;

    const gateway = await as('gateway');
    await expect(
      gateway
        .jetstream()
        .publish(EVENT_SUBJECTS.auth, Buffer.from(JSON.stringify({ forged: true })), { msgID: randomUUID() }),
    ).rejects.toMatchObject({ code: 'PERMISSIONS_VIOLATION' });
    // Its embedded ingress stores provider webhooks; every other event subject stays out of its reach.
    gateway.publish(EVENT_SUBJECTS.sync, Buffer.from('{}'));
    gateway.publish(EVENT_SUBJECTS.connection, Buffer.from('{}'));
    await gateway.flush();

    expect((await jsm.streams.info(EVENT_STREAM.name)).state.messages).toBe(before);
  });

  it('fails the boot of a service without credentials, saying which variables to set', async () => {
    const gateway = spawn(process.execPath, [join(repoRoot(), 'apps/gateway/dist/main.js')], {
      env: { ...withoutNatsSecrets(process.env), NATS_URL: nats.url, PORT: String(await freePort()) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    gateway.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    gateway.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    const code = await new Promise<number | null>((resolve) => gateway.once('exit', resolve));
    expect(code).toBe(1);
    expect(output).toContain(
      `NATS at ${nats.url} refused a client without credentials (authorization violation): ` +
        'set NATS_USER and NATS_PASSWORD',
    );
  });
});
