import { createHmac, randomUUID } from 'node:crypto';
import { createServer, request, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Nango } from '@nangohq/node';
import { startStack, type RunningService, type Stack } from '@switchboard/testing';
import { Client } from 'pg';
import {
  fakeOAuthProviderYaml,
  startFakeOAuthProvider,
  type FakeOAuthProvider,
} from './support/fake-oauth-provider';
import { call } from './support/http';
import { waitFor } from './support/processes';
import { startTcpForwarder } from './support/tcp-forwarder';
import { writeProvidersFile } from './support/providers-file';
import { raw } from './support/proxy-fakes';
import { startRecordingRelay, type RecordingRelay, type RelayedRequest } from './support/recording-relay';
import { linearIntegration } from './support/webhook-events';
import { WebhookReceiver } from './support/webhook-receiver';

/**
 * The replica profile: two processes of every service (and two Temporal workers of the orchestrator),
 * the gateway in remote proxy mode behind a round-robin balancer to both proxy replicas, driven through
 * both gateways with @nangohq/node and raw HTTP. What must hold when work is spread over replicas, and
 * when one of them is killed.
 */

const READY_MS = Number(process.env.TEST_STACK_READY_TIMEOUT_MS) || 240_000;
const ENGINE_ENV = { SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1' };
const LINEAR_SECRET = `lin-${randomUUID()}`;
const RELAY_ENV = {
  SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1',
  SWITCHBOARD_WEBHOOK_RETRY_SCHEDULE: '0,100ms,300ms,1s,2s,2s,2s,2s,2s,2s',
  SWITCHBOARD_WEBHOOK_POLL_INTERVAL: '100ms',
  SWITCHBOARD_WEBHOOK_ACK_WAIT: '2s',
};

/** A provider API on loopback: `/echo` answers at once, `/hold` and `/half` wait for `release()`. */
async function startApi() {
  const held: ServerResponse[] = [];
  let seen = 0;
  const server = createServer((req, res) => {
    seen++;
    if (req.url?.startsWith('/hold')) {
      held.push(res);
      return;
    }
    if (req.url?.startsWith('/half')) {
      // Headers and the first half of a body of known length, the rest held back.
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '20000' });
      res.write('a'.repeat(10000));
      held.push(res);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ ok: true, url: req.url }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get seen() {
      return seen;
    },
    get held() {
      return held.length;
    },
    release() {
      for (const res of held.splice(0)) {
        if (!res.headersSent) res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '4' });
        res.end(res.getHeader('content-length') === '20000' ? 'b'.repeat(10000) : 'done');
      }
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

type Outcome =
  | { kind: 'answer'; status: number; complete: boolean; bytes: number }
  | { kind: 'error'; code: string };

/** One request over a fresh socket: its full answer, or the network error that ended it. */
function outcome(url: string, headers: Record<string, string>): Promise<Outcome> {
  return new Promise((resolve) => {
    const req = request(url, { headers, agent: false }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => (bytes += c.length));
      res.on('end', () =>
        resolve({ kind: 'answer', status: res.statusCode ?? 0, complete: res.complete, bytes }),
      );
      res.on('error', (error: NodeJS.ErrnoException) =>
        resolve({ kind: 'error', code: error.code ?? error.message }),
      );
    });
    req.on('error', (error: NodeJS.ErrnoException) =>
      resolve({ kind: 'error', code: error.code ?? error.message }),
    );
    req.end();
  });
}

describe('two replicas of every service', () => {
  let provider: FakeOAuthProvider;
  let api: Awaited<ReturnType<typeof startApi>>;
  let balancer: RecordingRelay;
  let stack: Stack;
  let db: Client;
  let receiver: WebhookReceiver;
  const integration = `fake-${randomUUID().slice(0, 8)}`;
  const apiIntegration = `api-${randomUUID().slice(0, 8)}`;
  const gatewayUrls = () => stack.replicas.gateway.map((g) => `http://127.0.0.1:${g.port}`);
  const nangoOn = (url: string) => new Nango({ secretKey: stack.secretKey, host: url });
  const alive = (replicas: RunningService[]) =>
    replicas.filter((r) => r.process.exitCode === null && r.process.signalCode === null);
  const proxyHeaders = () => ({
    authorization: `Bearer ${stack.secretKey}`,
    'provider-config-key': apiIntegration,
    'connection-id': 'c1',
  });

  beforeAll(async () => {
    [provider, api, balancer, receiver] = await Promise.all([
      startFakeOAuthProvider({ delayMs: 200 }),
      startApi(),
      startRecordingRelay(),
      new WebhookReceiver().start(),
    ]);
    const providersFile = writeProvidersFile(
      fakeOAuthProviderYaml(provider, integration) +
        [
          `${apiIntegration}:`,
          '  display_name: Fake API',
          '  categories: [dev-tools]',
          '  docs: https://example.com/docs/fake-api',
          '  auth_mode: API_KEY',
          '  proxy:',
          "    base_url: '${connectionConfig.origin}'",
          "    headers: { x-api-key: '${apiKey}' }",
          '  connection_config:',
          "    origin: { type: string, title: Origin, pattern: '^http://127\\.0\\.0\\.1:[0-9]+$' }",
          '',
        ].join('\n'),
    );
    stack = await startStack({
      replicas: Object.fromEntries(
        (
          [
            'auth-connect',
            'connections-vault',
            'proxy',
            'functions-runtime',
            'sync-orchestrator',
            'webhook-relay',
            'gateway',
          ] as const
        ).map((s) => [s, 2]),
      ),
      env: { SWITCHBOARD_PROVIDERS_FILE: providersFile, SWITCHBOARD_RATE_LIMIT_PER_MIN: '100000' },
      serviceEnv: {
        // auth-connect calls the OAuth provider: it must trust the fake's certificate. (Its connect page
        // keeps the default port 0, a free one per replica.)
        'auth-connect': { NODE_EXTRA_CA_CERTS: provider.caFile },
        gateway: { ...ENGINE_ENV, SWITCHBOARD_PROXY_MODE: 'remote', SWITCHBOARD_PROXY_URL: balancer.url },
        proxy: ENGINE_ENV,
        'webhook-relay': RELAY_ENV,
      },
      readyTimeoutMs: READY_MS,
    });
    // The second Temporal worker of the orchestrator.
    stack.startWorker();
    balancer.targets = stack.replicas.proxy.map((p) => `http://127.0.0.1:${p.port}`);
    db = new Client({ connectionString: stack.databaseUrl });
    await db.connect();
    const nango = nangoOn(stack.gatewayUrl);
    await nango.createIntegration({
      provider: integration,
      unique_key: integration,
      credentials: { type: 'OAUTH2', client_id: provider.clientId, client_secret: provider.clientSecret },
    });
    await nango.createIntegration({ provider: apiIntegration, unique_key: apiIntegration });
    const res = await fetch(`${stack.gatewayUrl}/connections`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.secretKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        provider_config_key: apiIntegration,
        connection_id: 'c1',
        credentials: { type: 'API_KEY', apiKey: 'key-1' },
        connection_config: { origin: api.url },
      }),
    });
    expect(res.status).toBe(201);
    expect(
      (
        await call(stack.gatewayUrl, 'POST', '/integrations', {
          key: stack.secretKey,
          body: linearIntegration(LINEAR_SECRET),
        })
      ).status,
    ).toBe(200);
    const settings = await call(stack.gatewayUrl, 'PATCH', '/environment', {
      key: stack.secretKey,
      body: { webhook_settings: { primary_url: `${receiver.url}/hook` } },
    });
    expect(settings.status).toBe(200);
  }, READY_MS + 60_000);

  afterAll(async () => {
    await db?.end();
    await stack?.stop();
    await receiver?.stop();
    api?.release();
    await Promise.all([provider?.stop(), api?.close(), balancer?.close()]);
  });

  it('sends one refresh to the provider for 200 reads of an expiring connection spread over both gateways and both vaults', async () => {
    const tokens = provider.issue();
    const imported = await fetch(`${stack.gatewayUrl}/connections`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.secretKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        provider_config_key: integration,
        connection_id: 'burst',
        credentials: {
          type: 'OAUTH2',
          ...tokens,
          expires_at: new Date(Date.now() + 60_000).toISOString(),
        },
      }),
    });
    expect(imported.status).toBe(201);
    const before = provider.refreshCalls();
    // The provider holds its answer until both vault replicas have readers waiting on the connection.
    const held = provider.hold();
    const clients = gatewayUrls().map(nangoOn);
    const reads = Array.from({ length: 200 }, (_, i) => {
      const nango = clients[i % clients.length]!;
      return i % 4 < 2
        ? nango.getToken(integration, 'burst').then((t) => t as string)
        : nango
            .getConnection(integration, 'burst')
            .then((c) => (c.credentials as { access_token: string }).access_token);
    });
    await held.received;
    const holder = await waitFor('the refresh lease to be taken', async () => {
      const { rows } = await db.query(
        `SELECT refresh_lease_owner FROM vault.connections WHERE provider_config_key = $1 AND connection_id = $2`,
        [integration, 'burst'],
      );
      const owner = rows[0]?.refresh_lease_owner as string | null | undefined;
      return owner ? Number(owner.split('/')[1]) : undefined;
    });
    const other = stack.replicas['connections-vault'].find((r) => r.process.pid !== holder)!;
    await waitFor(
      'the other vault replica to wait for the holder',
      async () => (other.output.join('').includes('another replica is refreshing it') ? true : undefined),
      60_000,
    );
    held.release('proceed');

    const results = await Promise.all(reads);
    expect(provider.refreshCalls() - before).toBe(1);
    const fresh = provider.currentAccessToken(tokens.refresh_token);
    expect(fresh).toBeDefined();
    expect(fresh).not.toBe(tokens.access_token);
    expect(new Set(results)).toEqual(new Set([fresh]));
  }, 120_000);

  it('refuses a signed gateway request replayed to the other proxy replica, and still takes one it never saw', async () => {
    const [first] = gatewayUrls();
    const replay = (captured: RelayedRequest, target: string) =>
      raw(target, captured.method, captured.url, captured.headers, captured.body);
    const otherThan = (target: string) => balancer.targets.find((t) => t !== target)!;

    // Passed to one replica, answered; the same bytes sent to the other replica are refused unseen.
    const passed = await outcome(`${first}/proxy/echo`, proxyHeaders());
    expect(passed).toMatchObject({ kind: 'answer', status: 200 });
    const sent = balancer.captured.at(-1)!;
    const seen = api.seen;
    const refused = await replay(sent, otherThan(sent.target!));
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body.toString('utf8'))).toMatchObject({ error: { code: 'forbidden' } });
    expect((await replay(sent, sent.target!)).status).toBe(403);
    expect(api.seen).toBe(seen);

    // A request held back on the hop (its nonce unspent) is taken by either replica, once.
    balancer.forward = false;
    await outcome(`${first}/proxy/echo`, proxyHeaders());
    balancer.forward = true;
    const unspent = balancer.captured.at(-1)!;
    const [a, b] = balancer.targets as [string, string];
    expect((await replay(unspent, b)).status).toBe(200);
    expect(api.seen).toBe(seen + 1);
    expect((await replay(unspent, a)).status).toBe(403);
    expect(api.seen).toBe(seen + 1);
  });

  it('delivers every provider webhook, each under one id, while a relay replica is SIGKILLed and restarted', async () => {
    const EVENTS = 200;
    const PER_SECOND = 20;
    const gateways = gatewayUrls();
    const sendOne = (i: number) => {
      const text = JSON.stringify({
        action: 'create',
        type: 'Issue',
        organizationId: 'org-nobody',
        data: { id: `ev-${i}` },
        webhookTimestamp: Date.now(),
      });
      return fetch(`${gateways[i % gateways.length]}/webhook/${stack.environmentUuid}/linear`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'linear-signature': createHmac('sha256', LINEAR_SECRET).update(text).digest('hex'),
          'linear-delivery': randomUUID(),
          'linear-event': 'Issue',
        },
        body: text,
      }).then((r) => r.status);
    };
    /** The event a delivery carries (other webhooks of the environment, e.g. auth ones, carry none). */
    const eventOf = (hook: { body: string }) => {
      const id = (JSON.parse(hook.body) as { data?: { id?: unknown } }).data?.id;
      return typeof id === 'string' && id.startsWith('ev-') ? id : undefined;
    };
    const eventHooks = () => receiver.on('/hook').filter((hook) => eventOf(hook) !== undefined);
    const relay = stack.replicas['webhook-relay'][0]!;
    const started = Date.now();
    const statuses: Promise<number>[] = [];
    let restarted: Promise<unknown> | undefined;
    for (let i = 0; i < EVENTS; i++) {
      // A steady rate: the i-th webhook leaves at i / PER_SECOND seconds (sooner when behind).
      const due = started + (i * 1000) / PER_SECOND;
      if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
      statuses.push(sendOne(i));
      // A third of the way, once deliveries are flowing: kill one relay, and start another one.
      if (i === Math.floor(EVENTS / 3)) {
        relay.process.kill('SIGKILL');
        restarted = stack.startReplica('webhook-relay');
      }
    }
    expect(new Set(await Promise.all(statuses))).toEqual(new Set([200]));
    await restarted;
    expect(relay.process.signalCode).toBe('SIGKILL');

    const delivered = () => new Set(eventHooks().map(eventOf));
    await waitFor(
      'every event at the customer endpoint',
      async () => (delivered().size >= EVENTS ? true : undefined),
      120_000,
      200,
    );
    const hooks = eventHooks();
    const idsByEvent = new Map<string, Set<string>>();
    for (const hook of hooks) {
      const id = hook.headers['webhook-id'] as string;
      expect(id).toMatch(/^msg_/);
      const event = eventOf(hook)!;
      const ids = idsByEvent.get(event) ?? new Set<string>();
      ids.add(id);
      idsByEvent.set(event, ids);
    }
    expect([...idsByEvent.keys()].sort()).toEqual(Array.from({ length: EVENTS }, (_, i) => `ev-${i}`).sort());
    // At least once: a delivery the killed replica had sent but not recorded may come again, with its id.
    for (const ids of idsByEvent.values()) expect(ids.size).toBe(1);
    const duplicates = hooks.length - EVENTS;
    expect(duplicates).toBeGreaterThanOrEqual(0);
    expect(new Set(hooks.map((h) => h.headers['webhook-id'])).size).toBe(EVENTS);
    console.log(`webhooks: ${EVENTS} events, ${hooks.length} deliveries, ${duplicates} duplicates`);
  }, 240_000);

  it('a gateway replica killed under load: requests in flight end in a connection error, new ones succeed on the other', async () => {
    const [survivor, doomedUrl] = gatewayUrls() as [string, string];
    const doomed = stack.replicas.gateway[1]!;
    // Load on both gateways: answered requests keep flowing while some wait at the provider.
    const background = Array.from({ length: 20 }, (_, i) =>
      outcome(`${i % 2 ? doomedUrl : survivor}/proxy/echo?n=${i}`, proxyHeaders()),
    );
    const seenBefore = api.held;
    const inFlight = [
      ...Array.from({ length: 6 }, (_, i) => outcome(`${doomedUrl}/proxy/hold?n=${i}`, proxyHeaders())),
      ...Array.from({ length: 4 }, (_, i) => outcome(`${doomedUrl}/proxy/half?n=${i}`, proxyHeaders())),
    ];
    await waitFor('the provider to hold every request in flight', async () =>
      api.held - seenBefore >= 10 ? true : undefined,
    );
    await Promise.all(background);
    const exited = new Promise((resolve) => doomed.process.once('exit', resolve));
    doomed.process.kill('SIGKILL');
    const ended = await Promise.all(inFlight);
    await exited;
    api.release();
    // No answer of the killed replica: neither a status of its own nor a body cut short taken as whole.
    for (const result of ended) {
      if (result.kind === 'answer') expect(result.complete).toBe(false);
      else expect(['ECONNRESET', 'socket hang up', 'aborted']).toContain(result.code);
    }
    expect(ended.some((r) => r.kind === 'answer' && r.complete)).toBe(false);
    expect(alive(stack.replicas.gateway)).toHaveLength(1);

    const after = await Promise.all(
      Array.from({ length: 20 }, (_, i) => outcome(`${survivor}/proxy/echo?after=${i}`, proxyHeaders())),
    );
    expect(after.every((r) => r.kind === 'answer' && r.status === 200 && r.complete)).toBe(true);
  }, 120_000);

  it('answers 503 with Retry-After and service_unavailable while no orchestrator replica is up, and the same request once one is back', async () => {
    const [survivor] = alive(stack.replicas.gateway).map((g) => `http://127.0.0.1:${g.port}`) as [string];
    const trigger = () =>
      call(survivor, 'POST', '/sync/trigger', {
        key: stack.secretKey,
        body: { provider_config_key: apiIntegration, connection_id: 'c1', syncs: ['contacts'] },
      });
    await stack.stopService('sync-orchestrator', 'SIGKILL');
    // NATS drops the killed replicas' subscriptions once it sees their sockets close.
    const refused = await waitFor('the gateway to find no orchestrator', async () => {
      const res = await trigger();
      return res.status === 503 ? res : undefined;
    });
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(refused.body).toMatchObject({ error: { code: 'service_unavailable' } });

    await stack.startReplica('sync-orchestrator');
    const again = await waitFor('an orchestrator to answer again', async () => {
      const res = await trigger();
      return res.status === 503 ? undefined : res;
    });
    expect(again.status).toBeLessThan(500);
  }, 300_000);

  it('with one service down everywhere, GET /ready?scope=self (the readiness probe) stays 200 and only the routes needing it answer 503', async () => {
    const [survivor] = alive(stack.replicas.gateway).map((g) => `http://127.0.0.1:${g.port}`) as [string];
    await stack.stopService('webhook-relay');
    try {
      const whole = await call(survivor, 'GET', '/ready', { key: stack.secretKey });
      expect(whole.status).toBe(503);
      expect((whole.body as { checks: { name: string; ok: boolean }[] }).checks).toContainEqual(
        expect.objectContaining({ name: 'webhook-relay', ok: false }),
      );

      const own = await call(survivor, 'GET', '/ready?scope=self', { key: stack.secretKey });
      expect(own.status).toBe(200);
      const ownChecks = (own.body as { checks: { name: string }[] }).checks.map((c) => c.name);
      expect(ownChecks).toContain('nats');
      expect(ownChecks).not.toContain('webhook-relay');

      // The relay's route fails at once with a retryable answer; the others keep working.
      const started = Date.now();
      const settings = await call(survivor, 'GET', '/environment', { key: stack.secretKey });
      expect({ status: settings.status, retryAfter: settings.headers.get('retry-after') }).toEqual({
        status: 503,
        retryAfter: expect.stringMatching(/^[0-9]+$/),
      });
      expect(Date.now() - started).toBeLessThan(5_000);
      expect((await call(survivor, 'GET', '/integrations', { key: stack.secretKey })).status).toBe(200);
    } finally {
      await stack.startReplica('webhook-relay');
    }
    await waitFor('the whole stack ready again', async () =>
      (await call(survivor, 'GET', '/ready')).status === 200 ? true : undefined,
    );
  }, 180_000);

  describe('a dependency cut off for a few seconds (a loopback forwarder in between, cut and back)', () => {
    const gatewayOf = (replica: RunningService) => `http://127.0.0.1:${replica.port}`;
    const key = () => stack.secretKey;
    const stopped = (replica: RunningService) =>
      new Promise((resolve) => {
        if (replica.process.exitCode !== null || replica.process.signalCode !== null) return resolve(null);
        replica.process.once('exit', resolve);
        replica.process.kill('SIGTERM');
      });

    it('Postgres away from the vault: 503 service_unavailable with Retry-After, then the retried writes are stored once', async () => {
      const databaseUrl = new URL(stack.envOf('connections-vault').DATABASE_URL!);
      const forwarder = await startTcpForwarder(Number(databaseUrl.port || 5432));
      try {
        databaseUrl.port = String(forwarder.port);
        // The only vault replica left reaches Postgres through the forwarder.
        const before = alive(stack.replicas['connections-vault']);
        await stack.startReplica('connections-vault', { DATABASE_URL: databaseUrl.toString() });
        await Promise.all(before.map(stopped));
        const [gateway] = alive(stack.replicas.gateway).map(gatewayOf) as [string];
        const setMetadata = (value: string) =>
          call(gateway, 'POST', '/connections/metadata', {
            key: key(),
            body: { connection_id: 'c1', provider_config_key: apiIntegration, metadata: { cut: value } },
          });
        const importOne = () =>
          call(gateway, 'POST', '/connections', {
            key: key(),
            body: {
              provider_config_key: apiIntegration,
              connection_id: 'cut-import',
              credentials: { type: 'API_KEY', apiKey: 'key-cut' },
              connection_config: { origin: api.url },
            },
          });
        const read = () =>
          call(gateway, 'GET', `/connections/c1?provider_config_key=${apiIntegration}`, { key: key() });
        expect((await setMetadata('before')).status).toBe(201);

        await forwarder.cut();
        const during = [await setMetadata('during'), await importOne(), await read()];
        for (const res of during) {
          expect({ status: res.status, body: res.body }).toMatchObject({
            status: 503,
            body: { error: { code: 'service_unavailable', message: expect.stringContaining('database') } },
          });
          expect(res.headers.get('retry-after')).toBe('5');
        }

        await forwarder.resume();
        // Retried as Retry-After says: taken once the database is back.
        const imported = await waitFor('the import to go through', async () => {
          const res = await importOne();
          return res.status === 503 ? undefined : res;
        });
        expect(imported.status).toBe(201);
        expect((await setMetadata('after')).status).toBe(201);
        const connection = await read();
        expect(connection.status).toBe(200);
        expect(connection.body).toMatchObject({ metadata: { cut: 'after' } });
        const { rows } = await db.query(
          `SELECT count(*)::int AS n FROM vault.connections WHERE provider_config_key = $1 AND connection_id = $2`,
          [apiIntegration, 'cut-import'],
        );
        expect(rows[0]).toEqual({ n: 1 });
      } finally {
        await forwarder.close();
      }
    }, 180_000);

    it('NATS away from a gateway: 503 service_unavailable with Retry-After, then the retried creation is stored once', async () => {
      const forwarder = await startTcpForwarder(Number(new URL(stack.natsUrl).port));
      try {
        const replica = await stack.startReplica('gateway', {
          NATS_URL: `nats://127.0.0.1:${forwarder.port}`,
        });
        const gateway = gatewayOf(replica);
        const uniqueKey = `cut-${randomUUID().slice(0, 8)}`;
        const create = () =>
          call(gateway, 'POST', '/integrations', {
            key: key(),
            body: { provider: apiIntegration, unique_key: uniqueKey },
          });
        const list = () => call(gateway, 'GET', '/integrations', { key: key() });
        await waitFor('the new gateway to answer through NATS', async () =>
          (await list()).status === 200 ? true : undefined,
        );

        await forwarder.cut();
        const refused = await Promise.all([create(), list(), create()]);
        for (const res of refused) {
          expect({ status: res.status, body: res.body }).toMatchObject({
            status: 503,
            body: { error: { code: 'service_unavailable', message: expect.stringContaining('NATS') } },
          });
          expect(res.headers.get('retry-after')).toBe('5');
        }

        await forwarder.resume();
        const created = await waitFor('the creation to go through', async () => {
          const res = await create();
          return res.status === 503 ? undefined : res;
        });
        expect(created.status).toBe(200);
        const listed = (await list()).body as { data: { unique_key: string }[] };
        expect(listed.data.filter((i) => i.unique_key === uniqueKey)).toHaveLength(1);
        const { rows } = await db.query(
          `SELECT count(*)::int AS n FROM auth.integrations WHERE unique_key = $1`,
          [uniqueKey],
        );
        expect(rows[0]).toEqual({ n: 1 });
      } finally {
        await forwarder.close();
      }
    }, 180_000);
  });
});
