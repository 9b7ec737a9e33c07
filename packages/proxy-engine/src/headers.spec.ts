import { forwardedRequestHeaders, forwardedResponseHeaders } from './headers';

describe('forwardedResponseHeaders', () => {
  it('keeps the provider\'s end-to-end headers and drops per-hop ones, those named in Connection and our internal ones', () => {
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

  it('adds them to the app\'s own reply headers, the provider\'s winning on a clash', () => {
    const ours = { 'x-ratelimit-remaining': 99, 'access-control-allow-origin': '*' };
    const out = forwardedResponseHeaders({ 'x-ratelimit-remaining': '0', etag: '"v1"' }, ours);
    expect(out).toEqual({ 'x-ratelimit-remaining': '0', 'access-control-allow-origin': '*', etag: '"v1"' });
  });
});

describe('forwardedRequestHeaders', () => {
  it('passes body and negotiation headers and Nango-Proxy-* ones, never the caller\'s key or framing', () => {
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
