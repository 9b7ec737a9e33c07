import type { RunningService, Stack } from '@switchboard/testing';
import { call, createKey, expectError } from './support/http';
import { START_HOOK_TIMEOUT_MS, waitFor } from './support/processes';
import { raw, startFakeProvider, type FakeProvider } from './support/proxy-fakes';
import {
  BUSY_MACHINE_LATE_MS,
  canary,
  createProxyConnections,
  createProxyIntegrations,
  echo,
  expectNoCredentialAbroad,
  HEADERS_TIMEOUT_MS,
  importConnection,
  startProxyPolicyStack,
  type Canary,
  type Echo,
} from './support/proxy-policy-setup';
import { startRecordingRelay, type RecordingRelay, type RelayedRequest } from './support/recording-relay';

/**
 * What the proxy adds and refuses: each auth mode's credential on the provider request (and never the
 * caller's own key), our own errors in the compat shape, the egress policy on loopback addresses outside
 * the allow-list, timeouts, the 401 refresh, per-connection rate-limit governance, and the trust
 * boundary between gateway and proxy service. Through the gateway's default (embedded) mode; the proxy
 * service runs beside it for the trust-boundary test.
 */

describe('proxy: credentials, errors and policies', () => {
  let stack: Stack;
  let fake: FakeProvider;
  let canary4: Canary;
  let canary6: Canary;
  /** A server the caller of a proxy-only key controls, on an allowed address: it must never see a credential. */
  let foreign: FakeProvider;
  let remoteGateway: RunningService;
  /** A remote-mode gateway whose hop to the proxy service passes a network neighbour that records it. */
  let tappedGateway: RunningService;
  let neighbour: RecordingRelay;

  const proxy = (
    method: string,
    path: string,
    key: string,
    providerConfigKey: string,
    connectionId: string,
    headers: Record<string, string> = {},
    body?: unknown,
  ) =>
    call(stack.gatewayUrl, method, `/proxy${path}`, {
      key,
      headers: { 'provider-config-key': providerConfigKey, 'connection-id': connectionId, ...headers },
      ...(body === undefined ? {} : { body }),
    });

  beforeAll(async () => {
    [fake, foreign, canary4, canary6] = await Promise.all([
      startFakeProvider('a'),
      startFakeProvider('foreign'),
      canary('127.0.0.2'),
      canary('::1'),
    ]);
    stack = await startProxyPolicyStack();
    await createProxyIntegrations(stack, fake.url);
    remoteGateway = await stack.startReplica('gateway', { SWITCHBOARD_PROXY_MODE: 'remote' });
    neighbour = await startRecordingRelay([`http://127.0.0.1:${stack.services.proxy.port}`]);
    tappedGateway = await stack.startReplica('gateway', {
      SWITCHBOARD_PROXY_MODE: 'remote',
      SWITCHBOARD_PROXY_URL: neighbour.url,
    });

    await createProxyConnections(stack, fake.url);
  }, START_HOOK_TIMEOUT_MS);

  afterAll(async () => {
    await stack?.stop();
    await Promise.all([
      fake?.close(),
      foreign?.close(),
      canary4?.close(),
      canary6?.close(),
      neighbour?.close(),
    ]);
  });

  describe('credential injection', () => {
    it("sends the connection's token, forwards Nango-Proxy-* headers and never the caller's key or internal headers", async () => {
      const seen = echo(
        await proxy('GET', '/echo?a=1&b=%2F&c=x+y&d&e=%E2%9C%93&e=2', stack.secretKey, 'oauth2', 'c1', {
          'nango-proxy-x-custom': 'hello',
          'nango-proxy-accept': 'application/vnd.fake+json',
          'x-switchboard-caller': 'forged',
          'nango-proxy-x-switchboard-caller': 'forged',
          'base-url-override': '',
          'nango-activity-log-id': '',
          'x-forwarded-for': '10.9.9.9',
        }),
      );
      expect(seen.url).toBe('/echo?a=1&b=%2F&c=x+y&d&e=%E2%9C%93&e=2');
      expect(seen.headers).toMatchObject({
        authorization: 'Bearer at-1',
        'x-custom': 'hello',
        accept: 'application/vnd.fake+json',
        host: `127.0.0.1:${fake.port}`,
      });
      const names = Object.keys(seen.headers);
      expect(
        names.filter((n) =>
          /^(nango-|x-switchboard-|provider-config-key|connection-id|base-url-override|x-forwarded)/.test(n),
        ),
      ).toEqual([]);
      expect(JSON.stringify(seen.headers)).not.toContain(stack.secretKey);
    });

    it("puts an API key into the provider's header, query or JSON body template", async () => {
      const header = echo(await proxy('GET', '/echo', stack.secretKey, 'api-key', 'c1'));
      expect(header.url).toBe('/v2/echo');
      expect(header.headers).toMatchObject({ 'x-api-key': 'key-header', 'x-account': 'acme' });
      expect(header.headers.authorization).toBeUndefined();

      const query = echo(
        await proxy('GET', '/echo?q=1&api_key=caller-value', stack.secretKey, 'api-key-query', 'c1'),
      );
      expect(query.url).toBe('/echo?q=1&api_key=key%20query%26%3D');

      const body = echo(
        await proxy('POST', '/echo', stack.secretKey, 'api-key-body', 'c1', {}, { name: 'x' }),
      );
      expect(JSON.parse(body.body)).toEqual({ name: 'x', api_token: 'key-body' });
    });

    it('sends basic auth', async () => {
      const seen = echo(await proxy('GET', '/echo', stack.secretKey, 'basic', 'c1'));
      expect(seen.headers.authorization).toBe(`Basic ${Buffer.from('ada:l0velace:').toString('base64')}`);
    });

    it('signs OAuth 1.0a (query and form fields included) and TBA requests the provider can verify', async () => {
      const get = await proxy('GET', '/oauth1/resource?include=all&q=a%20b', stack.secretKey, 'oauth1', 'c1');
      expect(get.body).toMatchObject({ valid: true });
      const form = await raw(
        stack.gatewayUrl,
        'POST',
        '/proxy/oauth1/status',
        {
          authorization: `Bearer ${stack.secretKey}`,
          'provider-config-key': 'oauth1',
          'connection-id': 'c1',
          'content-type': 'application/x-www-form-urlencoded',
        },
        Buffer.from('status=Hello%20Ladies%20%2b%20Gentlemen&x=1'),
      );
      expect(JSON.parse(form.body.toString('utf8'))).toMatchObject({ valid: true });

      const tba = await proxy('GET', '/oauth1/record?algo=sha256&limit=5', stack.secretKey, 'tba', 'c1');
      expect(tba.body).toMatchObject({
        valid: true,
        authorization: expect.stringMatching(/^OAuth realm="1234_SB1", /),
      });
    });

    it('needs Base-Url-Override for a provider without a base URL; an empty one means unset', async () => {
      expectError(
        await proxy('GET', '/echo', stack.secretKey, 'no-base', 'c1', { 'base-url-override': '' }),
        400,
        'invalid_headers',
      );
      const seen = echo(
        await proxy('GET', '/echo', stack.secretKey, 'no-base', 'c1', {
          'base-url-override': `${fake.url}/api`,
        }),
      );
      expect(seen.url).toBe('/api/echo');
    });
  });

  describe('Base-Url-Override and credentials', () => {
    const gateways = [
      ['embedded', () => stack.gatewayUrl],
      ['remote', () => `http://127.0.0.1:${remoteGateway.port}`],
    ] as const;
    const via = (
      gatewayUrl: string,
      key: string,
      headers: Record<string, string>,
      providerConfigKey: string,
    ) =>
      call(gatewayUrl, 'GET', '/proxy/echo', {
        key,
        headers: { 'provider-config-key': providerConfigKey, 'connection-id': 'c1', ...headers },
      });
    let proxyOnly: string;
    let credentialReader: string;
    beforeAll(async () => {
      proxyOnly = await createKey(stack.gatewayUrl, stack.secretKey, ['environment:proxy'], 'proxy only');
      credentialReader = await createKey(
        stack.gatewayUrl,
        stack.secretKey,
        ['environment:proxy', 'environment:connections:read_credentials'],
        'proxy and credentials',
      );
    });

    it.each(gateways)(
      '%s: a proxy-only key aiming the override at another origin reaches it with no token, key or client secret',
      async (_mode, gatewayUrl) => {
        await expectNoCredentialAbroad(
          foreign,
          (providerConfigKey) =>
            via(gatewayUrl(), proxyOnly, { 'base-url-override': foreign.url }, providerConfigKey),
          ['key query'],
        );
      },
    );

    it.each(gateways)(
      "%s: the same key gets the credentials on the provider's own origin, and a key with read_credentials on any",
      async (_mode, gatewayUrl) => {
        const own = echo(
          await via(gatewayUrl(), proxyOnly, { 'base-url-override': fake.url }, 'secret-header'),
        );
        expect(own.headers).toMatchObject({
          authorization: 'Bearer at-secret-header',
          'x-api-key': 'cid:client-secret-etsy',
        });
        const anywhere = echo(
          await via(gatewayUrl(), credentialReader, { 'base-url-override': foreign.url }, 'secret-header'),
        );
        expect(anywhere.headers).toMatchObject({
          authorization: 'Bearer at-secret-header',
          'x-api-key': 'cid:client-secret-etsy',
        });
      },
    );
  });

  describe('provider redirects and credentials', () => {
    const gateways = [
      ['embedded', () => stack.gatewayUrl],
      ['remote', () => `http://127.0.0.1:${remoteGateway.port}`],
    ] as const;
    const followed = (gatewayUrl: string, key: string, providerConfigKey: string, to: string) =>
      call(gatewayUrl, 'GET', `/proxy/redirect?to=${encodeURIComponent(to)}`, {
        key,
        headers: {
          'provider-config-key': providerConfigKey,
          'connection-id': 'c1',
          'forward-headers-on-redirect': 'true',
        },
      });
    let proxyOnly: string;
    let credentialReader: string;
    beforeAll(async () => {
      proxyOnly = await createKey(
        stack.gatewayUrl,
        stack.secretKey,
        ['environment:proxy'],
        'redirect proxy only',
      );
      credentialReader = await createKey(
        stack.gatewayUrl,
        stack.secretKey,
        ['environment:proxy', 'environment:connections:read_credentials'],
        'redirect proxy and credentials',
      );
    });

    it.each(gateways)(
      '%s: a proxy-only key asking to forward headers on redirect sends no credential to another origin',
      async (_mode, gatewayUrl) => {
        await expectNoCredentialAbroad(
          foreign,
          (providerConfigKey) => followed(gatewayUrl(), proxyOnly, providerConfigKey, `${foreign.url}/echo`),
          ['api_key'],
        );
      },
    );

    it.each(gateways)(
      '%s: a redirect on the same origin keeps the credentials; another origin gets them only with read_credentials',
      async (_mode, gatewayUrl) => {
        const same = echo(await followed(gatewayUrl(), proxyOnly, 'secret-header', `${fake.url}/echo`));
        expect(same.headers).toMatchObject({
          authorization: 'Bearer at-secret-header',
          'x-api-key': 'cid:client-secret-etsy',
        });
        const query = echo(await followed(gatewayUrl(), proxyOnly, 'api-key-query', '/echo'));
        expect(query.url).toMatch(/^\/echo\?api_key=key/);
        const granted = echo(
          await followed(gatewayUrl(), credentialReader, 'secret-header', `${foreign.url}/echo`),
        );
        expect(granted.headers).toMatchObject({
          authorization: 'Bearer at-secret-header',
          'x-api-key': 'cid:client-secret-etsy',
        });
        const notAsked = echo(
          await call(gatewayUrl(), 'GET', `/proxy/redirect?to=${encodeURIComponent(`${foreign.url}/echo`)}`, {
            key: credentialReader,
            headers: { 'provider-config-key': 'secret-header', 'connection-id': 'c1' },
          }),
        );
        expect(notAsked.headers.authorization).toBeUndefined();
      },
    );
  });

  describe('our own errors', () => {
    it('uses the compat codes for an unknown integration, an unknown connection and missing headers', async () => {
      expectError(
        await proxy('GET', '/echo', stack.secretKey, 'no-such-integration', 'c1'),
        404,
        'unknown_provider_config',
      );
      expectError(
        await proxy('GET', '/echo', stack.secretKey, 'oauth2', 'no-such-connection'),
        404,
        'unknown_connection',
      );
      const missing = await call(stack.gatewayUrl, 'GET', '/proxy/echo', {
        key: stack.secretKey,
        headers: { 'provider-config-key': 'oauth2' },
      });
      expectError(missing, 400, 'invalid_headers');
      expectError(
        await proxy('GET', '/echo', stack.secretKey, 'oauth2', 'c1', { retries: 'many' }),
        400,
        'invalid_headers',
      );
    });

    it('needs a key with environment:proxy', async () => {
      const key = await createKey(stack.gatewayUrl, stack.secretKey, ['environment:connections:read']);
      const error = expectError(await proxy('GET', '/echo', key, 'oauth2', 'c1'), 403, 'forbidden');
      expect(error.message).toContain('environment:proxy');
      expectError(await call(stack.gatewayUrl, 'GET', '/proxy/echo', {}), 401, 'missing_auth_header');
    });

    it("answers a browser's CORS preflight itself, without a key and without calling the provider", async () => {
      const before = fake.seen.length;
      const preflight = await raw(stack.gatewayUrl, 'OPTIONS', '/proxy/echo', {
        origin: 'https://app.example.com',
        'access-control-request-method': 'POST',
      });
      expect(preflight.status).toBe(204);
      expect(preflight.headers['access-control-allow-origin']).toBe('*');
      expect(fake.seen.length).toBe(before);
    });

    it('refuses a request sent straight to the proxy service, even with forged caller headers', async () => {
      const direct = await raw(`http://127.0.0.1:${stack.services.proxy.port}`, 'GET', '/proxy/echo', {
        'provider-config-key': 'oauth2',
        'connection-id': 'c1',
        'x-switchboard-caller': Buffer.from(
          JSON.stringify({
            accountId: 1,
            environmentId: 1,
            environmentUuid: '00000000-0000-4000-8000-000000000000',
            environmentName: 'dev',
          }),
        ).toString('base64url'),
        'x-switchboard-timestamp': String(Date.now()),
        'x-switchboard-signature': 'AAAA',
      });
      expect(direct.status).toBe(403);
      expect(JSON.parse(direct.body.toString('utf8'))).toMatchObject({ error: { code: 'forbidden' } });
    });

    it('refuses a signed gateway request replayed by a network neighbour, and one whose connection or body it changed', async () => {
      const proxyService = `http://127.0.0.1:${stack.services.proxy.port}`;
      const viaTap = (body?: unknown) =>
        call(`http://127.0.0.1:${tappedGateway.port}`, body === undefined ? 'GET' : 'POST', '/proxy/echo', {
          key: stack.secretKey,
          headers: { 'provider-config-key': 'api-key', 'connection-id': 'c1' },
          ...(body === undefined ? {} : { body }),
        });
      const resend = (captured: RelayedRequest, headers: Record<string, string> = {}, body = captured.body) =>
        raw(proxyService, captured.method, captured.url, { ...captured.headers, ...headers }, body);

      // Passed on once: the provider answers; the same bytes sent again are refused, and reach no provider.
      neighbour.forward = true;
      expect((await viaTap()).status).toBe(200);
      const passed = neighbour.captured.at(-1)!;
      const seen = fake.seen.length;
      const replayed = await resend(passed);
      expect(replayed.status).toBe(403);
      expect(JSON.parse(replayed.body.toString('utf8'))).toMatchObject({ error: { code: 'forbidden' } });

      // Held back by the neighbour (its nonce unspent): changing the connection headers is refused...
      neighbour.forward = false;
      await viaTap({ amount: 1 });
      const held = neighbour.captured.at(-1)!;
      expect((await resend(held, { 'connection-id': 'expired' })).status).toBe(403);
      expect((await resend(held, { 'base-url-override': foreign.url })).status).toBe(403);
      expect(fake.seen.length).toBe(seen);
      // ...while the untouched request still goes through, once.
      const original = await resend(held);
      expect(original.status).toBe(200);
      expect(JSON.parse((JSON.parse(original.body.toString('utf8')) as { body: string }).body)).toEqual({
        amount: 1,
      });
      // A body swapped for another of the same length (signature and nonce intact) never reaches the provider.
      await viaTap({ amount: 2 });
      const another = neighbour.captured.at(-1)!;
      const swapped = Buffer.from(JSON.stringify({ amount: 9 }));
      expect(another.body.length).toBe(swapped.length);
      const before = fake.seen.length;
      expect((await resend(another, {}, swapped)).status).toBe(403);
      expect(fake.seen.length).toBe(before);
      expect((await resend(held)).status).toBe(403);
    });

    it('answers a hung provider with 504 in our shape at the configured time, and frees the socket', async () => {
      const closedBefore = fake.hangClosed;
      const started = Date.now();
      const res = await proxy('GET', '/hang', stack.secretKey, 'oauth2', 'c1');
      const elapsed = Date.now() - started;
      expectError(res, 504, 'gateway_timeout');
      expect(elapsed).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 100);
      // The configured time, not the default minute.
      expect(elapsed).toBeLessThan(HEADERS_TIMEOUT_MS + BUSY_MACHINE_LATE_MS);
      const deadline = Date.now() + BUSY_MACHINE_LATE_MS;
      while (fake.hangClosed === closedBefore && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      expect(fake.hangClosed).toBe(closedBefore + 1);
    });
  });

  describe('egress policy (loopback addresses outside the allow-list stand in for private ones)', () => {
    const hosts = (port: number, port6: number) => [
      `http://127.0.0.2:${port}`,
      `http://0x7f.0.0.2:${port}`,
      `http://2130706434:${port}`,
      `http://127.2:${port}`,
      `http://[::1]:${port6}`,
      `http://[::ffff:127.0.0.2]:${port}`,
      `http://localhost:${port6}`,
    ];

    it('refuses every Base-Url-Override that resolves outside the allow-list, and nothing reaches it', async () => {
      for (const base of hosts(canary4.port, canary6.port)) {
        const res = await proxy('GET', '/x', stack.secretKey, 'oauth2', 'c1', { 'base-url-override': base });
        expectError(res, 403, 'egress_refused');
      }
      expectError(
        await proxy('GET', '/x', stack.secretKey, 'oauth2', 'c1', {
          'base-url-override': 'file:///etc/passwd',
        }),
        400,
        'invalid_headers',
      );
      expect({ v4: canary4.hits, v6: canary6.hits }).toEqual({ v4: 0, v6: 0 });
    });

    it('refuses a provider redirect to such an address', async () => {
      for (const to of hosts(canary4.port, canary6.port)) {
        const res = await proxy(
          'GET',
          `/redirect?to=${encodeURIComponent(`${to}/steal`)}`,
          stack.secretKey,
          'oauth2',
          'c1',
        );
        expectError(res, 403, 'egress_refused');
      }
      expect({ v4: canary4.hits, v6: canary6.hits }).toEqual({ v4: 0, v6: 0 });
    });

    it.each(['//evil.example/x', '/\\evil.example/x', '/http://evil.example/x'])(
      'refuses the endpoint %s with 400',
      async (endpoint) => {
        expectError(await proxy('GET', endpoint, stack.secretKey, 'oauth2', 'c1'), 400, 'invalid_uri_params');
      },
    );
  });

  describe('refresh and rate limits', () => {
    it('a provider 401 triggers one refresh through the vault and one retry', async () => {
      const before = fake.tokenRequests;
      const res = await proxy('GET', '/needs-fresh-token', stack.secretKey, 'oauth2', 'c1');
      expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { ok: true } });
      expect(fake.tokenRequests).toBe(before + 1);
      const calls = fake.seen.filter((s) => s.url === '/needs-fresh-token');
      expect(calls.map((s) => s.headers.authorization)).toEqual(['Bearer at-1', `Bearer ${fake.freshToken}`]);
    });

    it('an expired token is refreshed through the vault before the call', async () => {
      const before = fake.tokenRequests;
      const calls = fake.seen.filter((s) => s.url === '/needs-fresh-token').length;
      const res = await proxy('GET', '/needs-fresh-token', stack.secretKey, 'oauth2', 'expired');
      expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { ok: true } });
      expect(fake.tokenRequests).toBe(before + 1);
      expect(fake.seen.filter((s) => s.url === '/needs-fresh-token').length).toBe(calls + 1);
    });

    it('a 401 on a connection that cannot be refreshed comes back unchanged, after one call', async () => {
      const before = fake.seen.length;
      const res = await proxy('GET', '/needs-fresh-token', stack.secretKey, 'oauth2-ungoverned', 'c1');
      expect({ status: res.status, body: res.body }).toEqual({ status: 401, body: { error: 'expired' } });
      expect(fake.seen.length).toBe(before + 1);
    });

    it('after a provider reports its quota spent, the next call for that connection waits for the reset', async () => {
      const first = await proxy('GET', '/quota/governed', stack.secretKey, 'oauth2', 'c1');
      expect(first.headers.get('x-ratelimit-remaining')).toBe('0');
      const reset = Number(first.headers.get('x-ratelimit-reset')) * 1000;
      const second = await proxy('GET', '/quota/governed', stack.secretKey, 'oauth2', 'c1');
      expect(second.status).toBe(200);
      const [, arrived] = fake.calls('quota/governed');
      expect(arrived!).toBeGreaterThanOrEqual(reset - 50);
    });

    it('a 429 with Retry-After holds back later calls of that connection; the integration switch turns it off', async () => {
      const limited = await proxy('GET', '/rate-limited/governed?after=2', stack.secretKey, 'oauth2', 'c1');
      expect(limited.status).toBe(429);
      await proxy('GET', '/rate-limited/governed', stack.secretKey, 'oauth2', 'c1');
      const [first, second] = fake.calls('rate-limited/governed');
      expect(second! - first!).toBeGreaterThanOrEqual(1900);

      // Ungoverned, a Retry-After of 4 s (within the configured wait) holds nothing back: the next call
      // comes well before it, however busy the machine.
      await proxy('GET', '/rate-limited/ungoverned?after=4', stack.secretKey, 'oauth2-ungoverned', 'c1');
      await proxy('GET', '/rate-limited/ungoverned', stack.secretKey, 'oauth2-ungoverned', 'c1');
      const [a, b] = fake.calls('rate-limited/ungoverned');
      expect(b! - a!).toBeLessThan(3500);
    });

    it('answers 429 at once when the known reset is further away than the configured wait', async () => {
      await proxy('GET', '/rate-limited/far?after=30', stack.secretKey, 'oauth2', 'c1');
      const started = Date.now();
      const res = await proxy('GET', '/rate-limited/far', stack.secretKey, 'oauth2', 'c1');
      expectError(res, 429, 'too_many_request');
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(25);
      // At once: sooner than the configured wait (5 s) it would otherwise spend, however busy the machine.
      expect(Date.now() - started).toBeLessThan(4000);
      expect(fake.calls('rate-limited/far')).toHaveLength(1);
    });
  });

  describe('cached credentials', () => {
    it('a re-imported or deleted connection takes effect on the next calls, though credentials are cached for ten minutes', async () => {
      // A gateway whose cache alone would serve the old key for ten minutes: only the vault's announcement can make it change.
      const replica = await stack.startReplica('gateway', { SWITCHBOARD_PROXY_CREDENTIALS_TTL_MS: '600000' });
      const via = (path: string) =>
        call(`http://127.0.0.1:${replica.port}`, 'GET', `/proxy${path}`, {
          key: stack.secretKey,
          headers: { 'provider-config-key': 'api-key', 'connection-id': 'cached' },
        });

      await importConnection(stack, fake.url, 'api-key', 'cached', { type: 'API_KEY', apiKey: 'key-v1' });
      expect(echo(await via('/echo')).headers['x-api-key']).toBe('key-v1');

      await importConnection(stack, fake.url, 'api-key', 'cached', { type: 'API_KEY', apiKey: 'key-v2' });
      await waitFor(
        'the re-imported key',
        async () => ((await via('/echo')).body as Echo).headers['x-api-key'] === 'key-v2' || undefined,
        3000,
        50,
      );

      const deleted = await call(
        stack.gatewayUrl,
        'DELETE',
        '/connections/cached?provider_config_key=api-key',
        { key: stack.secretKey },
      );
      expect(deleted.status).toBe(200);
      await waitFor('the deletion', async () => (await via('/echo')).status === 404 || undefined, 3000, 50);
      expectError(await via('/echo'), 404, 'unknown_connection');
    });
  });
});
