import { randomUUID } from 'node:crypto';
import type { Stack } from '@switchboard/testing';
import { call, createKey, expectError, type ApiResponse } from './support/http';
import {
  seedAccount,
  START_HOOK_TIMEOUT_MS,
  startGateway,
  startNatsServer,
  waitFor,
  type ExtraProcess,
} from './support/processes';
import { standardStackWithGateway } from './support/standard-stack';

/**
 * The public HTTP edge, driven with raw requests: authentication, scopes, validation, body limits,
 * routing, rate limiting across replicas, and the health probes. One stack serves the whole file
 * (stacks on one NATS would answer each other's requests); the rate limit runs on two extra gateway
 * replicas of it with a low limit, and the NATS outage on a gateway of its own.
 */

const BODY_LIMIT = 2048;

let stack: Stack;

beforeAll(async () => {
  // The standard stack, through a gateway of this file's own with a small body limit.
  stack = await standardStackWithGateway({ SWITCHBOARD_BODY_LIMIT_BYTES: String(BODY_LIMIT) });
}, START_HOOK_TIMEOUT_MS);
afterAll(async () => {
  await stack?.stop();
});

describe('gateway edge', () => {
  /** GET with the stack's full key, another key, or none at all (`null`). */
  const get = (path: string, key: string | null = stack.secretKey, headers?: Record<string, string>) =>
    call(stack.gatewayUrl, 'GET', path, { key: key ?? undefined, headers });
  const integrationKeys = async () =>
    ((await get('/integrations')).body as { data: { unique_key: string }[] }).data.map((i) => i.unique_key);

  describe('API reference', () => {
    it('serves the OpenAPI document for this server, and the docs page with its assets, without a key', async () => {
      const document = await call(stack.gatewayUrl, 'GET', '/openapi.json');
      expect(document.status).toBe(200);
      expect(document.body).toMatchObject({
        openapi: expect.stringMatching(/^3\.1\./),
        servers: [{ url: stack.gatewayUrl }],
        paths: expect.objectContaining({ '/integrations': expect.any(Object) }),
      });
      const page = await call(stack.gatewayUrl, 'GET', '/docs');
      expect(page.status).toBe(200);
      expect(page.text).toContain('<script src="/docs/assets/swagger-ui-bundle.js"></script>');
      const bundle = await fetch(`${stack.gatewayUrl}/docs/assets/swagger-ui-bundle.js`);
      expect(bundle.status).toBe(200);
      expect(bundle.headers.get('content-type')).toBe('application/javascript; charset=utf-8');
      expect(await bundle.text()).toContain('SwaggerUIBundle');
      expectError(await call(stack.gatewayUrl, 'GET', '/docs/assets/package.json'), 404, 'not_found');
    });
  });

  describe('probes', () => {
    it('GET /health answers 200 {"result":"ok"} without a key', async () => {
      const res = await call(stack.gatewayUrl, 'GET', '/health');
      expect(res.status).toBe(200);
      expect(res.text).toBe('{"result":"ok"}');
    });

    it('GET /ready without a key (or with a key nobody issued) answers the status alone', async () => {
      for (const key of [null, randomUUID()]) {
        const res = await call(stack.gatewayUrl, 'GET', '/ready', key ? { key } : {});
        expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { status: 'ready' } });
        expect(res.text).not.toMatch(/auth-connect|version|uptime|nats/);
      }
    });

    it('GET /ready with a secret key lists every service it depends on as ok; not the proxy service, the proxy is embedded', async () => {
      const res = await call(stack.gatewayUrl, 'GET', '/ready', { key: stack.secretKey });
      expect(res.status).toBe(200);
      const checks = (res.body as { checks: { name: string; ok: boolean }[] }).checks;
      for (const service of [
        'auth-connect',
        'connections-vault',
        'functions-runtime',
        'sync-orchestrator',
        'webhook-relay',
      ]) {
        expect(checks).toContainEqual(expect.objectContaining({ name: service, ok: true }));
      }
      expect(checks.map((c) => c.name)).not.toContain('proxy');
    });
  });

  describe('authentication', () => {
    it('401 missing_auth_header without an Authorization header', async () => {
      expectError(await get('/integrations', null), 401, 'missing_auth_header');
    });

    it.each([
      ['"Bearer" alone', 'Bearer'],
      ['a Basic scheme', 'Basic x'],
      ['an empty header', ''],
    ])('401 malformed_auth_header for %s', async (_label, header) => {
      expectError(await get('/integrations', null, { authorization: header }), 401, 'malformed_auth_header');
    });

    it('401 invalid_secret_key_format for a key that is not a UUID', async () => {
      expectError(await get('/integrations', 'not-a-uuid'), 401, 'invalid_secret_key_format');
    });

    it('401 unknown_account for a well-formed key nobody issued', async () => {
      expectError(await get('/integrations', randomUUID()), 401, 'unknown_account');
    });
  });

  describe('scopes', () => {
    it('403 forbidden naming the scope when a key lacks it', async () => {
      const providersOnly = await createKey(stack.gatewayUrl, stack.secretKey, [
        'environment:providers:read',
      ]);
      expect((await get('/providers/github', providersOnly)).status).toBe(200);
      const error = expectError(await get('/integrations', providersOnly), 403, 'forbidden');
      expect(error.message).toContain('environment:integrations:read');
    });

    it('403 forbidden for include=credentials without integrations:read_credentials; the secret never leaves', async () => {
      const secret = `cs-${randomUUID()}`;
      const created = await call(stack.gatewayUrl, 'POST', '/integrations', {
        key: stack.secretKey,
        body: {
          provider: 'github',
          unique_key: 'gh-scoped',
          credentials: { type: 'OAUTH2', client_id: 'id', client_secret: secret },
        },
      });
      expect(created.status).toBe(200);

      const readOnly = await createKey(stack.gatewayUrl, stack.secretKey, ['environment:integrations:read']);
      const plain = await get('/integrations/gh-scoped', readOnly);
      expect(plain.status).toBe(200);
      expect(plain.text).not.toContain(secret);

      const refused = await get('/integrations/gh-scoped?include=credentials', readOnly);
      expect(expectError(refused, 403, 'forbidden').message).toContain(
        'environment:integrations:read_credentials',
      );
      expect(refused.text).not.toContain(secret);

      const withCredentials = await get('/integrations/gh-scoped?include=credentials');
      expect(withCredentials.text).toContain(secret);
    });
  });

  describe('validation', () => {
    const post = (body: unknown, headers?: Record<string, string>) =>
      call(stack.gatewayUrl, 'POST', '/integrations', { key: stack.secretKey, body, headers });

    it('400 invalid_json for a malformed body, nothing stored', async () => {
      expectError(await post('{"provider":"github","unique_key":"bad-json"'), 400, 'invalid_json');
      expectError(await get('/integrations/bad-json'), 404, 'not_found');
    });

    it('400 invalid_body with a path for every unknown field and bad value, nothing stored', async () => {
      const res = await post({
        provider: 'github',
        unique_key: 'bad-body',
        display_name: '',
        forward_webhooks: 'yes',
        colour: 'blue',
        credentials: { type: 'OAUTH2', client_id: 'id', client_secret: 's', scopes: 'has spaces', extra: 1 },
      });
      const error = expectError(res, 400, 'invalid_body');
      const paths = error.errors!.map((e) => e.path);
      expect(paths).toEqual(
        expect.arrayContaining([
          ['display_name'],
          ['forward_webhooks'],
          ['colour'],
          ['credentials', 'scopes'],
          ['credentials', 'extra'],
        ]),
      );
      expect(paths).toHaveLength(5);
      expectError(await get('/integrations/bad-body'), 404, 'not_found');
      expect(await integrationKeys()).not.toContain('bad-body');
    });

    it('400 invalid_body for a webhook_secret over 255 characters on create and on update, nothing stored', async () => {
      const long = 'w'.repeat(256);
      const credentials = { type: 'OAUTH2', client_id: 'id', client_secret: 's' };
      const created = await post({
        provider: 'github',
        unique_key: 'long-webhook-secret',
        credentials: { ...credentials, webhook_secret: long },
      });
      expect(expectError(created, 400, 'invalid_body').errors!.map((e) => e.path)).toEqual([
        ['credentials', 'webhook_secret'],
      ]);
      expectError(await get('/integrations/long-webhook-secret'), 404, 'not_found');

      // 255 is accepted; growing it past the limit later is refused the same way, and the stored one stays.
      const ok = await post({
        provider: 'github',
        unique_key: 'long-webhook-secret',
        credentials: { ...credentials, webhook_secret: 'w'.repeat(255) },
      });
      expect(ok.status).toBe(200);
      const patched = await call(stack.gatewayUrl, 'PATCH', '/integrations/long-webhook-secret', {
        key: stack.secretKey,
        body: { credentials: { ...credentials, webhook_secret: long } },
      });
      expectError(patched, 400, 'invalid_body');
      const stored = await call(
        stack.gatewayUrl,
        'GET',
        '/integrations/long-webhook-secret?include=credentials',
        {
          key: stack.secretKey,
        },
      );
      expect(
        (stored.body as { data: { credentials: { webhook_secret: string } } }).data.credentials
          .webhook_secret,
      ).toHaveLength(255);
    });

    it('400 invalid_body for a missing body on a route that takes one', async () => {
      expectError(
        await call(stack.gatewayUrl, 'POST', '/integrations', {
          key: stack.secretKey,
          headers: { 'content-type': 'application/json' },
        }),
        400,
        'invalid_body',
      );
    });

    it('400 invalid_query_params for an unknown query key or value', async () => {
      const unknown = expectError(await get('/integrations?page=2'), 400, 'invalid_query_params');
      expect(unknown.errors).toContainEqual(expect.objectContaining({ path: ['page'] }));
      const badValue = expectError(
        await get('/integrations/gh-scoped?include=everything'),
        400,
        'invalid_query_params',
      );
      expect(badValue.errors).toContainEqual(expect.objectContaining({ path: ['include'] }));
    });

    it('400 for a NUL character in a body string, nothing stored', async () => {
      const res = await post('{"provider":"github","unique_key":"nul-body","display_name":"a\\u0000b"}');
      const error = expectError(res, 400, 'invalid_body');
      expect(error.errors).toContainEqual(expect.objectContaining({ path: ['display_name'] }));
      expectError(await get('/integrations/nul-body'), 404, 'not_found');
    });

    it('400 for a NUL character in a query string or a path', async () => {
      expectError(await get('/providers?search=a%00b'), 400, 'invalid_query_params');
      expectError(await get('/integrations/a%00b'), 400, 'invalid_uri_params');
    });

    it('415 invalid_content_type for a body that is not JSON', async () => {
      const res = await post('provider=github', { 'content-type': 'text/plain' });
      expectError(res, 415, 'invalid_content_type');
    });

    it(`413 payload_too_large above SWITCHBOARD_BODY_LIMIT_BYTES (${BODY_LIMIT}), nothing stored; a body under it is accepted`, async () => {
      const big = {
        provider: 'github',
        unique_key: 'too-big',
        integration_config: { blob: 'x'.repeat(BODY_LIMIT) },
      };
      expectError(await post(big), 413, 'payload_too_large');
      expectError(await get('/integrations/too-big'), 404, 'not_found');

      const fits = {
        provider: 'github',
        unique_key: 'fits',
        integration_config: { blob: 'x'.repeat(BODY_LIMIT - 200) },
      };
      expect(JSON.stringify(fits).length).toBeLessThan(BODY_LIMIT);
      expect((await post(fits)).status).toBe(200);
    });
  });

  describe('what the official client sends', () => {
    it('accepts Content-Type: application/json on GET and DELETE without a body', async () => {
      const json = { 'content-type': 'application/json' };
      expect((await get('/integrations', stack.secretKey, json)).status).toBe(200);
      expect((await get('/environment-variables', stack.secretKey, json)).status).toBe(200);

      expect(
        (
          await call(stack.gatewayUrl, 'POST', '/integrations', {
            key: stack.secretKey,
            body: { provider: 'github', unique_key: 'to-delete' },
          })
        ).status,
      ).toBe(200);
      const deleted = await call(stack.gatewayUrl, 'DELETE', '/integrations/to-delete', {
        key: stack.secretKey,
        headers: json,
      });
      expect({ status: deleted.status, body: deleted.body }).toEqual({
        status: 200,
        body: { success: true },
      });
      expect(await integrationKeys()).not.toContain('to-delete');
    });

    it('routes a trailing slash like the path without it', async () => {
      const withSlash = await get('/integrations/');
      expect(withSlash.status).toBe(200);
      expect(withSlash.body).toEqual((await get('/integrations')).body);
      expect((withSlash.body as { data: unknown[] }).data.length).toBeGreaterThan(0);
    });

    it('404 route_not_found for an unknown route', async () => {
      expectError(await get('/no-such-route'), 404, 'route_not_found');
      expectError(
        await call(stack.gatewayUrl, 'DELETE', '/providers/github', { key: stack.secretKey }),
        404,
        'route_not_found',
      );
    });
  });
});

describe('rate limit', () => {
  const LIMIT = 5;
  const SESSION_LIMIT = 3;
  let replicaA: ExtraProcess;
  let replicaB: ExtraProcess;

  beforeAll(async () => {
    const env = {
      NATS_URL: stack.natsUrl,
      ...stack.natsCredentials('gateway'),
      SWITCHBOARD_RATE_LIMIT_PER_MIN: String(LIMIT),
      SWITCHBOARD_SESSION_RATE_LIMIT_PER_MIN: String(SESSION_LIMIT),
    };
    [replicaA, replicaB] = await Promise.all([startGateway(env), startGateway(env)]);
  }, START_HOOK_TIMEOUT_MS);
  afterAll(async () => {
    await Promise.all([replicaA?.stop(), replicaB?.stop()]);
  });

  const headersOf = (res: ApiResponse) => ({
    limit: res.headers.get('x-ratelimit-limit'),
    remaining: res.headers.get('x-ratelimit-remaining'),
    reset: res.headers.get('x-ratelimit-reset'),
  });

  function expectTooMany(res: ApiResponse) {
    expectError(res, 429, 'too_many_request');
    const retryAfter = res.headers.get('retry-after');
    expect(retryAfter).toMatch(/^\d+$/);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(retryAfter)).toBeLessThanOrEqual(60);
    expect(headersOf(res)).toMatchObject({ limit: String(LIMIT), remaining: '0' });
  }

  // Each test uses an account of its own: windows are per account, and the stack's account has
  // already spent more than this limit in the tests above.
  it(`answers with X-RateLimit-* on every call and 429 too_many_request with Retry-After on call ${LIMIT + 1}`, async () => {
    const { secretKey } = seedAccount(stack);
    const now = Math.floor(Date.now() / 1000);
    for (let i = 1; i <= LIMIT; i++) {
      const res = await call(replicaA.url, 'GET', '/integrations', { key: secretKey });
      expect(res.status).toBe(200);
      const h = headersOf(res);
      expect(h).toEqual({
        limit: String(LIMIT),
        remaining: String(LIMIT - i),
        reset: expect.stringMatching(/^\d+$/),
      });
      expect(Number(h.reset)).toBeGreaterThanOrEqual(now);
      expect(Number(h.reset)).toBeLessThanOrEqual(now + 62);
    }
    expectTooMany(await call(replicaA.url, 'GET', '/integrations', { key: secretKey }));
  });

  it('shares one window per account across two gateway replicas', async () => {
    const { secretKey } = seedAccount(stack);
    const onA = () => call(replicaA.url, 'GET', '/integrations', { key: secretKey });
    const onB = () => call(replicaB.url, 'GET', '/integrations', { key: secretKey });

    const remaining: (string | null)[] = [];
    for (const send of [onA, onA, onA, onB, onB]) {
      const res = await send();
      expect(res.status).toBe(200);
      remaining.push(res.headers.get('x-ratelimit-remaining'));
    }
    expect(remaining).toEqual(['4', '3', '2', '1', '0']);
    expectTooMany(await onB());
    expectTooMany(await onA());
  });

  it("a browser hammering with a connect session token exhausts only its session's window; the secret key keeps working", async () => {
    const { secretKey } = seedAccount(stack);
    const created = await call(replicaA.url, 'POST', '/connect/sessions', {
      key: secretKey,
      body: { end_user: { id: 'browser-user' } },
    });
    expect(created.status).toBe(201);
    const token = (created.body as { data: { token: string } }).data.token;

    const statuses: number[] = [];
    for (let i = 0; i < SESSION_LIMIT + 10; i++) {
      const res = await call(i % 2 ? replicaA.url : replicaB.url, 'GET', '/connect/session', { key: token });
      statuses.push(res.status);
      if (res.status === 429) {
        expectError(res, 429, 'too_many_request');
        expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
        expect(res.headers.get('x-ratelimit-limit')).toBe(String(SESSION_LIMIT));
      }
    }
    expect(statuses).toEqual([...Array<number>(SESSION_LIMIT).fill(200), ...Array<number>(10).fill(429)]);

    // The account's window only counted the session's creation.
    const backend = await call(replicaA.url, 'GET', '/integrations', { key: secretKey });
    expect(backend.status).toBe(200);
    expect(headersOf(backend)).toMatchObject({ limit: String(LIMIT), remaining: String(LIMIT - 2) });
  });
});

describe('health without NATS', () => {
  let nats: ExtraProcess | undefined;
  let gateway: ExtraProcess | undefined;

  afterAll(async () => {
    await gateway?.stop();
    await nats?.stop();
  });

  it(
    'GET /health answers 503 while NATS is unreachable, and 200 again once it is back',
    async () => {
      nats = await startNatsServer();
      gateway = await startGateway({ NATS_URL: nats.url });
      const health = () => call(gateway!.url, 'GET', '/health');
      expect((await health()).text).toBe('{"result":"ok"}');

      await nats.stop();
      const down = await waitFor('/health to answer 503', async () => {
        const res = await health();
        return res.status === 503 ? res : undefined;
      });
      expect(down.body).not.toEqual({ result: 'ok' });
      expect(down.text).toContain('nats');

      nats = await startNatsServer(nats.port);
      const up = await waitFor('/health to answer 200 again', async () => {
        const res = await health();
        return res.status === 200 ? res : undefined;
      });
      expect(up.text).toBe('{"result":"ok"}');
    },
    START_HOOK_TIMEOUT_MS,
  );
});
