import type { RunningService, Stack } from '@switchboard/testing';
import { call, createKey } from './support/http';
import { START_HOOK_TIMEOUT_MS } from './support/processes';
import { comparable, raw, startFakeProvider, type FakeProvider } from './support/proxy-fakes';
import { standardStackWithGateway } from './support/standard-stack';

/**
 * The gateway's proxy front door serves a call without Fastify when everything it needs is already held
 * (a cached key with `environment:proxy`, room in the rate-limit slice) and hands every other request to
 * Fastify. The answer must not depend on which way it went: every request below is sent to the default
 * gateway (its key cache warm, so the direct way is taken whenever it can be) and to a replica whose key
 * cache is off (so every request goes through Fastify, the access hook and CORS), and the two answers are
 * compared byte for byte, headers included (only the date and the rate-limit counters may differ).
 */

/** Headers whose values legitimately differ between two answers (not their presence). */
const VOLATILE = new Set(['date', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'keep-alive', 'connection']);

describe('proxy front door: the direct way and the Fastify way answer alike', () => {
  let stack: Stack;
  let fake: FakeProvider;
  /** A gateway without a key cache: nothing is ever served directly. */
  let framework: RunningService;
  let noProxyScopeKey: string;

  beforeAll(async () => {
    fake = await startFakeProvider('front');
    // The standard stack, through a gateway of this file's own with the key cache's default lifetime (the
    // standard gateway's is short), so the direct way is taken whenever it can be.
    stack = await standardStackWithGateway({ SWITCHBOARD_KEY_CACHE_TTL_MS: '5000' });
    framework = await stack.startReplica('gateway', { SWITCHBOARD_KEY_CACHE_TTL_MS: '0' });
    const integration = await call(stack.gatewayUrl, 'POST', '/integrations', {
      key: stack.secretKey,
      body: {
        provider: 'fake-oauth2',
        unique_key: 'front',
        credentials: { type: 'OAUTH2', client_id: 'cid', client_secret: 'csecret' },
      },
    });
    expect(integration.status).toBe(200);
    const connection = await call(stack.gatewayUrl, 'POST', '/connections', {
      key: stack.secretKey,
      body: {
        provider_config_key: 'front',
        connection_id: 'c1',
        credentials: { type: 'OAUTH2', access_token: 'front-token' },
        connection_config: { origin: fake.url },
      },
    });
    expect([200, 201]).toContain(connection.status);
    noProxyScopeKey = await createKey(
      stack.gatewayUrl,
      stack.secretKey,
      ['environment:integrations:read'],
      'no proxy scope',
    );
  }, START_HOOK_TIMEOUT_MS);

  afterAll(async () => {
    await stack?.stop();
    await fake?.close();
  });

  const ids = { 'provider-config-key': 'front', 'connection-id': 'c1' };
  const bearer = () => ({ authorization: `Bearer ${stack.secretKey}` });

  it.each<[string, string, string, () => Record<string, string>, string | null]>([
    [
      'JSON with cookies, etag and links',
      'GET',
      '/proxy/json?page=2&q=a%20b',
      () => ({ ...bearer(), ...ids }),
      null,
    ],
    ['HEAD', 'HEAD', '/proxy/json', () => ({ ...bearer(), ...ids }), null],
    [
      '304 on a matching etag',
      'GET',
      '/proxy/json',
      () => ({ ...bearer(), ...ids, 'if-none-match': '"v1"' }),
      null,
    ],
    ['204', 'DELETE', '/proxy/empty', () => ({ ...bearer(), ...ids }), null],
    ["the provider's 404", 'GET', '/proxy/missing', () => ({ ...bearer(), ...ids }), null],
    ['gzip left compressed', 'GET', '/proxy/gzip', () => ({ ...bearer(), ...ids }), null],
    ['gzip decompressed', 'GET', '/proxy/gzip', () => ({ ...bearer(), ...ids, decompress: 'true' }), null],
    [
      'a JSON body',
      'POST',
      '/proxy/echo',
      () => ({ ...bearer(), ...ids, 'content-type': 'application/json' }),
      '{"a":1}',
    ],
    ['a plain OPTIONS (a provider call)', 'OPTIONS', '/proxy/echo', () => ({ ...bearer(), ...ids }), null],
    ['/proxy with no endpoint', 'GET', '/proxy', () => ({ ...bearer(), ...ids }), null],
    ['a 600-character path', 'GET', `/proxy/echo/${'x'.repeat(600)}`, () => ({ ...bearer(), ...ids }), null],
    ['percent-encoded path', 'GET', '/proxy/echo/a%40b/%E2%82%AC', () => ({ ...bearer(), ...ids }), null],
    ['malformed percent-encoding', 'GET', '/proxy/echo/a%zzb', () => ({ ...bearer(), ...ids }), null],
    [
      'unknown connection',
      'GET',
      '/proxy/json',
      () => ({ ...bearer(), 'provider-config-key': 'front', 'connection-id': 'nobody' }),
      null,
    ],
    [
      'unknown integration',
      'GET',
      '/proxy/json',
      () => ({ ...bearer(), 'provider-config-key': 'nothing', 'connection-id': 'c1' }),
      null,
    ],
    ['no Connection-Id', 'GET', '/proxy/json', () => ({ ...bearer(), 'provider-config-key': 'front' }), null],
    ['a bad Retries header', 'GET', '/proxy/json', () => ({ ...bearer(), ...ids, retries: 'many' }), null],
    ['an endpoint leaving the host', 'GET', '/proxy//evil.example/x', () => ({ ...bearer(), ...ids }), null],
    ['a NUL in the path', 'GET', '/proxy/echo/a%00b', () => ({ ...bearer(), ...ids }), null],
    ['a NUL in the query', 'GET', '/proxy/echo?a=%00', () => ({ ...bearer(), ...ids }), null],
    ['no key', 'GET', '/proxy/json', () => ({ ...ids }), null],
    ['a malformed key', 'GET', '/proxy/json', () => ({ authorization: 'Bearer not-a-key', ...ids }), null],
    [
      'an unknown key',
      'GET',
      '/proxy/json',
      () => ({ authorization: 'Bearer 00000000-0000-4000-8000-000000000000', ...ids }),
      null,
    ],
    [
      'a key without environment:proxy',
      'GET',
      '/proxy/json',
      () => ({ authorization: `Bearer ${noProxyScopeKey}`, ...ids }),
      null,
    ],
    [
      'a CORS preflight',
      'OPTIONS',
      '/proxy/json',
      () => ({
        origin: 'https://app.example',
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'authorization',
      }),
      null,
    ],
    [
      'a browser call with an Origin',
      'GET',
      '/proxy/json',
      () => ({ ...bearer(), ...ids, origin: 'https://app.example' }),
      null,
    ],
  ])('%s', async (_name, method, path, headers, body) => {
    const send = (base: string) =>
      raw(base, method, path, headers(), body === null ? undefined : Buffer.from(body));
    // Twice on the default gateway: the first call may be the one that caches the key.
    await send(stack.gatewayUrl);
    const [direct, viaFastify] = [
      await send(stack.gatewayUrl),
      await send(`http://127.0.0.1:${framework.port}`),
    ];
    expect(comparable(direct, VOLATILE)).toEqual(comparable(viaFastify, VOLATILE));
  });

  it('answers a target the router cannot decode with a 400 in the documented shape', async () => {
    const res = await raw(stack.gatewayUrl, 'GET', '/proxy/echo/a%zzb', { ...bearer(), ...ids });
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body.toString('utf8'))).toEqual({
      error: { code: 'invalid_uri_params', message: expect.any(String) },
    });
    expect(fake.seen.some((s) => s.url.includes('%zz'))).toBe(false);
  });

  it('counts direct calls against the same rate-limit window', async () => {
    const headers = { ...bearer(), ...ids };
    // /echo, whose answer has no rate-limit headers of its own (a provider's would win over ours).
    const first = await raw(stack.gatewayUrl, 'GET', '/proxy/echo', headers);
    const second = await raw(stack.gatewayUrl, 'GET', '/proxy/echo', headers);
    expect(first.headers['x-ratelimit-limit']).toBeDefined();
    expect(Number(second.headers['x-ratelimit-remaining'])).toBeLessThan(
      Number(first.headers['x-ratelimit-remaining']),
    );
  });
});
