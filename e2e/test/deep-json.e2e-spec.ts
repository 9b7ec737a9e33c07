import { createHmac, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  EVENT_CONSUMERS,
  EVENT_STREAM,
  EVENT_SUBJECTS,
  type ProviderWebhookEvent,
  type SyncEvent,
} from '@switchboard/contracts';
import { startStack, type Stack } from '@switchboard/testing';
import { connect } from 'nats';
import { consumerDrained, noDeliveryPending } from './support/barriers';
import { call, expectError } from './support/http';
import { START_HOOK_TIMEOUT_MS, STACK_READY_TIMEOUT_MS, waitFor } from './support/processes';
import { writeProxyProvidersFile } from './support/proxy-fakes';
import { linearIntegration } from './support/webhook-events';
import { WebhookReceiver } from './support/webhook-receiver';

/**
 * JSON nesting as an attack: a body of 10,000 nested arrays (about 20 KB) parses without trouble, but
 * every recursive walk of it after (NUL checks, validation, JSON.stringify on its way over NATS or into
 * a forward) overflows the stack. The gateway refuses it from the raw text (400 invalid_body, nothing
 * stored); a provider webhook that deep is accepted (the provider cannot fix it by retrying) and
 * dead-lettered in the delivery log at once, never retried.
 */

const DEEP = '['.repeat(10_000) + ']'.repeat(10_000);
const LINEAR_SECRET = `lin-${randomUUID()}`;
const TOO_DEEP = /nests arrays or objects more than 64 levels deep/;

let stack: Stack;
let receiver: WebhookReceiver;
/** A provider API on loopback; `fake-api-key-body` puts the API key into JSON bodies (`proxy.body`). */
let providerApi: Server;
const providerBodies: string[] = [];

beforeAll(async () => {
  receiver = await new WebhookReceiver().start();
  providerApi = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      providerBodies.push(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => providerApi.listen(0, '127.0.0.1', resolve));
  stack = await startStack({
    // No script runs here, and the gateway runs the proxy engine itself.
    services: ['gateway', 'auth-connect', 'connections-vault', 'sync-orchestrator', 'webhook-relay'],
    env: { SWITCHBOARD_PROVIDERS_FILE: writeProxyProvidersFile() },
    serviceEnv: {
      gateway: { SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1' },
      'webhook-relay': {
        SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1',
        SWITCHBOARD_WEBHOOK_POLL_INTERVAL: '100ms',
        // An event failing on every try is dead-lettered on its third (after 2 s and 4 s of backoff).
        SWITCHBOARD_EVENT_MAX_DELIVER: '3',
      },
    },
    readyTimeoutMs: STACK_READY_TIMEOUT_MS,
  });
}, START_HOOK_TIMEOUT_MS);

afterAll(async () => {
  await stack?.stop();
  await receiver?.stop();
  await new Promise((resolve) => providerApi?.close(resolve));
});

const api = (method: string, path: string, body?: unknown) =>
  call(stack.gatewayUrl, method, path, { key: stack.secretKey, ...(body !== undefined ? { body } : {}) });

/** `template` with its `"@"` replaced by `nested` (JSON text): an otherwise valid body. */
const withNested = (template: unknown, nested: string) => JSON.stringify(template).replace('"@"', nested);

describe('deeply nested JSON bodies on the API', () => {
  const integration = `deep-${randomUUID().slice(0, 8)}`;

  beforeAll(async () => {
    expect(
      (await api('POST', '/integrations', { provider: 'anthropic', unique_key: integration })).status,
    ).toBe(200);
    const imported = await api('POST', '/connections', {
      provider_config_key: integration,
      connection_id: 'deep-conn',
      credentials: { type: 'API_KEY', apiKey: `key-${randomUUID()}` },
    });
    expect(imported.status).toBe(201);
  });

  it('POST /connect/sessions with 10,000 nested arrays answers 400 invalid_body, and no session is made', async () => {
    const res = await api(
      'POST',
      '/connect/sessions',
      withNested({ end_user: { id: 'deep-user' }, organization: { id: 'org', display_name: '@' } }, DEEP),
    );
    const error = expectError(res, 400, 'invalid_body');
    expect(error.message).toMatch(TOO_DEEP);
    expect(res.text).not.toContain('token');
  });

  it('POST /integrations with 10,000 nested arrays answers 400 invalid_body, and no integration is stored', async () => {
    const key = `deep-int-${randomUUID().slice(0, 8)}`;
    const res = await api(
      'POST',
      '/integrations',
      withNested({ provider: 'github', unique_key: key, display_name: '@' }, DEEP),
    );
    expect(expectError(res, 400, 'invalid_body').message).toMatch(TOO_DEEP);
    expectError(await api('GET', `/integrations/${key}`), 404, 'not_found');
  });

  it('POST /connections/metadata with 10,000 nested arrays answers 400 invalid_body, and the metadata is unchanged', async () => {
    const res = await api(
      'POST',
      '/connections/metadata',
      withNested(
        { connection_id: 'deep-conn', provider_config_key: integration, metadata: { deep: '@' } },
        DEEP,
      ),
    );
    expect(expectError(res, 400, 'invalid_body').message).toMatch(TOO_DEEP);
    const connection = await api('GET', `/connections/deep-conn?provider_config_key=${integration}`);
    expect(connection.status).toBe(200);
    expect((connection.body as { metadata: unknown }).metadata).toBeNull();
  });

  it('accepts a body nesting as deep as the limit, 64 levels', async () => {
    // The body's own object and `metadata` are two levels: 63 arrays make 65, 62 make 64.
    const nested = '['.repeat(63) + '1' + ']'.repeat(63);
    const res = await api(
      'POST',
      '/connections/metadata',
      withNested(
        { connection_id: 'deep-conn', provider_config_key: integration, metadata: '@' },
        `{"a":${nested}}`,
      ),
    );
    expect(expectError(res, 400, 'invalid_body').message).toMatch(TOO_DEEP);
    const allowed = '['.repeat(62) + '1' + ']'.repeat(62);
    const ok = await api(
      'POST',
      '/connections/metadata',
      withNested(
        { connection_id: 'deep-conn', provider_config_key: integration, metadata: '@' },
        `{"a":${allowed}}`,
      ),
    );
    expect(ok.status).toBe(201);
    const connection = await api('GET', `/connections/deep-conn?provider_config_key=${integration}`);
    expect(JSON.stringify((connection.body as { metadata: unknown }).metadata)).toBe(`{"a":${allowed}}`);
  });
});

describe('deeply nested proxy bodies', () => {
  it('refuses a JSON body the proxy would merge the API key into past 128 levels, sending nothing to the provider', async () => {
    const created = await api('POST', '/integrations', {
      provider: 'fake-api-key-body',
      unique_key: 'deep-api',
    });
    expect(created.status).toBe(200);
    const apiKey = `key-${randomUUID()}`;
    const imported = await api('POST', '/connections', {
      provider_config_key: 'deep-api',
      connection_id: 'deep-proxy',
      credentials: { type: 'API_KEY', apiKey },
      connection_config: { origin: `http://127.0.0.1:${(providerApi.address() as AddressInfo).port}` },
    });
    expect(imported.status).toBe(201);
    const proxy = (body: string) =>
      call(stack.gatewayUrl, 'POST', '/proxy/items', {
        key: stack.secretKey,
        headers: { 'connection-id': 'deep-proxy', 'provider-config-key': 'deep-api' },
        body,
      });

    const refused = await proxy(withNested({ items: '@' }, DEEP));
    expect(expectError(refused, 400, 'invalid_body').message).toMatch(
      /nests arrays or objects more than 128 levels deep/,
    );
    expect(providerBodies).toEqual([]);

    // A body of ordinary depth gets the key merged in and goes through.
    const ok = await proxy(JSON.stringify({ items: [[1, 2]] }));
    expect(ok.status).toBe(200);
    expect(providerBodies.map((b) => JSON.parse(b) as unknown)).toEqual([
      { items: [[1, 2]], api_token: apiKey },
    ]);
  });
});

describe('deeply nested deploys', () => {
  it("lets a deploy nest up to 100 levels (models' JSON schemas nest two per object), and no deeper", async () => {
    const deploy = (levels: number) =>
      api(
        'POST',
        '/sync/deploy/confirmation',
        withNested(
          { flowConfigs: [], reconcile: false, debug: false, jsonSchema: '@' },
          '{"a":'.repeat(levels) + '1' + '}'.repeat(levels),
        ),
      );
    expect(expectError(await deploy(10_000), 400, 'invalid_body').message).toMatch(
      /nests arrays or objects more than 100 levels deep/,
    );
    // 80 levels: past the API's 64, refused (if at all) for what it says, not for its depth.
    expect((await deploy(80)).text).not.toMatch(/levels deep/);
  });
});

describe('deeply nested provider webhooks', () => {
  interface Delivery {
    id: number;
    status: string;
    type: string;
    connection_id: string | null;
    provider_config_key: string | null;
    attempts: number;
    last_error: string | null;
    next_attempt_at: string | null;
  }
  const deliveries = async (status: string) =>
    (
      (await api('GET', `/environment/webhook-deliveries?status=${status}&limit=100`)).body as {
        data: Delivery[];
      }
    ).data;

  const sendLinear = (text: string) =>
    fetch(`${stack.gatewayUrl}/webhook/${stack.environmentUuid}/linear`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'linear-signature': createHmac('sha256', LINEAR_SECRET).update(text).digest('hex'),
        'linear-delivery': randomUUID(),
        'linear-event': 'Issue',
      },
      body: text,
    });

  beforeAll(async () => {
    expect((await api('POST', '/integrations', linearIntegration(LINEAR_SECRET))).status).toBe(200);
    const settings = await api('PATCH', '/environment', {
      webhook_settings: { primary_url: `${receiver.url}/primary` },
    });
    expect(settings.status).toBe(200);
  });

  it('accepts a signed webhook nesting 10,000 levels, forwards nothing, and dead-letters it in the delivery log at once, never retried', async () => {
    const body = withNested(
      { action: 'create', organizationId: 'org-deep', webhookTimestamp: Date.now(), data: '@' },
      DEEP,
    );
    const res = await sendLinear(body);
    // 200: a provider retries a non-2xx for days (or disables the subscription); retrying cannot help.
    expect(res.status).toBe(200);

    const [dead] = await waitFor(
      'the dead letter',
      async () => {
        const rows = await deliveries('dead_lettered');
        return rows.length > 0 ? rows : undefined;
      },
      10_000,
    );
    expect(dead).toMatchObject({
      status: 'dead_lettered',
      type: 'forward',
      provider_config_key: 'linear',
      attempts: 0,
      next_attempt_at: null,
      last_error: expect.stringMatching(TOO_DEEP),
    });
    // The payload is not kept, and a dead letter cannot be pushed out.
    const detail = await api('GET', `/environment/webhook-deliveries/${dead!.id}`);
    expect(detail.text).not.toContain('[[[[');
    expectError(await api('POST', `/environment/webhook-deliveries/${dead!.id}/redeliver`), 409, 'conflict');

    // The relay keeps going: the next webhook is forwarded; the deep one never was, and is not retried.
    const next = {
      action: 'create',
      organizationId: 'org-after',
      marker: randomUUID(),
      webhookTimestamp: Date.now(),
    };
    expect((await sendLinear(JSON.stringify(next))).status).toBe(200);
    const [hook] = await receiver.waitFor(1, '/primary');
    expect(JSON.parse(hook!.body)).toEqual(next);
    // Every stored webhook routed and every planned delivery sent: nothing more is on its way.
    await consumerDrained(stack.natsUrl, EVENT_CONSUMERS.relayProviderWebhook);
    await noDeliveryPending(stack);
    expect(receiver.received.map((h) => JSON.parse(h.body) as unknown)).toEqual([next]);
    expect(await deliveries('dead_lettered')).toEqual([dead]);
  });

  it('dead-letters a stored webhook event too deep to deliver (as stored before this check) at once, and JetStream never hands it out again', async () => {
    const environment = (await api('GET', '/environment')).body as { data: { id: number } };
    const event: ProviderWebhookEvent = {
      id: `pw_${randomUUID()}`,
      environmentId: environment.data.id,
      providerConfigKey: 'linear',
      provider: 'linear',
      receivedAt: new Date().toISOString(),
      forward: true,
      verified: true,
      contentType: 'application/json',
      headers: {},
      body: withNested({ action: 'create', organizationId: 'org-stored', data: '@' }, DEEP),
      bodyEncoding: 'utf8',
      routing: [],
      subscriptionTypes: [],
    };
    const before = receiver.received.length;
    const known = new Set((await deliveries('dead_lettered')).map((d) => d.id));
    const nc = await connect({ servers: stack.natsUrl });
    try {
      await nc
        .jetstream()
        .publish(EVENT_SUBJECTS.providerWebhook, Buffer.from(JSON.stringify(event)), { msgID: event.id });
      const dead = await waitFor(
        'the stored event dead-lettered',
        async () => (await deliveries('dead_lettered')).find((d) => !known.has(d.id)),
        10_000,
      );
      const detail = (await api('GET', `/environment/webhook-deliveries/${dead.id}`)).body as {
        data: { body: string };
      };
      // Why, and which event: never its payload.
      expect(JSON.parse(detail.data.body)).toEqual({
        eventId: event.id,
        reason: expect.stringMatching(TOO_DEEP),
        tries: 1,
      });
      expect(dead).toMatchObject({
        status: 'dead_lettered',
        type: 'forward',
        attempts: 0,
        last_error: expect.stringMatching(TOO_DEEP),
      });
      // Terminated: nothing pending or waiting to be redelivered, nothing sent.
      const info = await (
        await nc.jetstreamManager()
      ).consumers.info(EVENT_STREAM.name, EVENT_CONSUMERS.relayProviderWebhook);
      expect({ pending: info.num_pending, unacked: info.num_ack_pending }).toEqual({
        pending: 0,
        unacked: 0,
      });
      await noDeliveryPending(stack);
      expect(receiver.received.length).toBe(before);
    } finally {
      await nc.close();
    }
  });

  // Last: it stops the vault.
  it('dead-letters an event whose planning fails on every try after SWITCHBOARD_EVENT_MAX_DELIVER tries, instead of retrying it forever', async () => {
    const environment = (await api('GET', '/environment')).body as { data: { id: number } };
    const event: SyncEvent = {
      id: `sync-${randomUUID()}`,
      environmentId: environment.data.id,
      connectionId: 'conn-exhausted',
      providerConfigKey: 'linear',
      syncName: 'issues',
      syncVariant: 'base',
      model: 'Issue',
      syncType: 'INCREMENTAL',
      result: {
        success: false,
        error: { type: 'script_error', description: 'failed' },
        startedAt: new Date().toISOString(),
        failedAt: new Date().toISOString(),
      },
    };
    // Planning a sync event asks the vault for the connection's webhook URL override: down, it fails.
    await stack.stopService('connections-vault');
    const known = new Set((await deliveries('dead_lettered')).map((d) => d.id));
    const nc = await connect({ servers: stack.natsUrl });
    try {
      const started = Date.now();
      await nc
        .jetstream()
        .publish(EVENT_SUBJECTS.sync, Buffer.from(JSON.stringify(event)), { msgID: event.id });
      const dead = await waitFor(
        'the exhausted event dead-lettered',
        async () => (await deliveries('dead_lettered')).find((d) => !known.has(d.id)),
        30_000,
      );
      // Tried three times, 2 s then 4 s apart: not given up on at the first failure.
      expect(Date.now() - started).toBeGreaterThan(5_000);
      expect(dead).toMatchObject({
        status: 'dead_lettered',
        type: 'sync',
        connection_id: 'conn-exhausted',
        provider_config_key: 'linear',
        last_error: expect.stringMatching(/^not processed after 3 tries: /),
      });
      const info = await (
        await nc.jetstreamManager()
      ).consumers.info(EVENT_STREAM.name, EVENT_CONSUMERS.relaySync);
      expect({ maxDeliver: info.config.max_deliver, unacked: info.num_ack_pending }).toEqual({
        maxDeliver: 3,
        unacked: 0,
      });
    } finally {
      await nc.close();
    }
  });
});
