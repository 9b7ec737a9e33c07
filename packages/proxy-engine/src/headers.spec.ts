import { proxyRequestHeadersSchema } from '@switchboard/contracts';
import { forwardedRequestHeaders, forwardedResponseHeaders, parseProxyHeaders } from './headers';
import { ProxyError } from './proxy.errors';

describe('forwardedResponseHeaders', () => {
  it("keeps the provider's end-to-end headers and drops per-hop ones, those named in Connection and our internal ones", () => {
    const out = forwardedResponseHeaders({
      'content-type': 'application/json',
      'set-cookie': ['a=1', 'b=2'],
      connection: 'keep-alive, x-hop',
      'x-hop': 'gone',
      'transfer-encoding': 'chunked',
      'x-switchboard-error-code': 'forbidden',
    });
    expect(out).toEqual({ 'content-type': 'application/json', 'set-cookie': ['a=1', 'b=2'] });
  });

  it("adds them to the app's own reply headers, the provider's winning on a clash", () => {
    const ours = { 'x-ratelimit-remaining': 99, 'access-control-allow-origin': '*' };
    const out = forwardedResponseHeaders({ 'x-ratelimit-remaining': '0', etag: '"v1"' }, ours);
    expect(out).toEqual({ 'x-ratelimit-remaining': '0', 'access-control-allow-origin': '*', etag: '"v1"' });
  });
});

describe('forwardedRequestHeaders', () => {
  it("passes body and negotiation headers and Nango-Proxy-* ones, never the caller's key or framing", () => {
    const out = forwardedRequestHeaders({
      authorization: 'Bearer secret-key',
      'content-type': 'application/json',
      accept: 'application/json',
      'nango-proxy-x-custom': 'v',
      'nango-proxy-host': 'evil.example',
      'nango-proxy-x-switchboard-caller': 'forged',
      'x-forwarded-for': '10.0.0.1',
    });
    expect(out).toEqual({ 'content-type': 'application/json', accept: 'application/json', 'x-custom': 'v' });
  });
});

describe('parseProxyHeaders', () => {
  const base = { 'provider-config-key': 'github', 'connection-id': 'u-1' };
  const long = (n: number) => 'x'.repeat(n);

  // The common case skips the schema: every row must come out exactly as the schema says.
  it.each([
    ['the two names', base],
    ['an empty Base-Url-Override (the client always sends one)', { ...base, 'base-url-override': '' }],
    ['a Base-Url-Override', { ...base, 'base-url-override': 'http://127.0.0.1:9/v1' }],
    [
      'names at their longest',
      { 'provider-config-key': long(255), 'connection-id': long(255), 'base-url-override': long(2048) },
    ],
    ['Retries and Retry-On', { ...base, retries: '3', 'retry-on': '408,409' }],
    ['Decompress', { ...base, decompress: 'true' }],
    ['an extra header the schema ignores', { ...base, accept: 'application/json' }],
    ['a repeated name (the first value counts)', { ...base, 'connection-id': ['u-2', 'u-3'] }],
  ])('accepts %s as the schema does', (_label, headers) => {
    const picked = Object.fromEntries(
      Object.entries(headers)
        .filter(([k]) => k in proxyRequestHeadersSchema.shape)
        .map(([k, v]) => [k, Array.isArray(v) ? v[0] : v]),
    );
    expect(parseProxyHeaders(headers)).toEqual(proxyRequestHeadersSchema.parse(picked));
  });

  it.each([
    [
      'no Connection-Id',
      { 'provider-config-key': 'github' },
      'Provider-Config-Key and Connection-Id headers are required',
    ],
    ['no headers at all', {}, 'Provider-Config-Key and Connection-Id headers are required'],
    ['an empty Connection-Id', { ...base, 'connection-id': '' }, 'Invalid proxy headers'],
    [
      'a Provider-Config-Key over 255 characters',
      { ...base, 'provider-config-key': long(256) },
      'Invalid proxy headers',
    ],
    [
      'a Base-Url-Override over 2048 characters',
      { ...base, 'base-url-override': long(2049) },
      'Invalid proxy headers',
    ],
    ['Retries that are not a number', { ...base, retries: 'many' }, 'Invalid proxy headers'],
  ])('refuses %s with invalid_headers', (_label, headers, message) => {
    let thrown: unknown;
    try {
      parseProxyHeaders(headers);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ProxyError);
    expect(thrown).toMatchObject({ code: 'invalid_headers', message });
  });
});
