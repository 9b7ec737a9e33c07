import { buildTarget, splitEndpoint } from './target';

const target = (base: string, url: string, extra: [string, string][] = []) => {
  const { path, query } = splitEndpoint(url);
  return buildTarget(base, 'provider', path, query, extra);
};

describe('buildTarget', () => {
  it('appends the endpoint to the base path and keeps the query string byte for byte', () => {
    expect(target('https://api.example.com/v3/', '/proxy/users/42?a=1&b=%2F&c=x+y&d')).toEqual({
      origin: 'https://api.example.com',
      path: '/v3/users/42?a=1&b=%2F&c=x+y&d',
    });
    expect(target('https://api.example.com', '/proxy')).toEqual({
      origin: 'https://api.example.com',
      path: '/',
    });
    // As Nango: an empty endpoint is the base URL itself.
    expect(target('https://api.example.com/v1', '/proxy/')).toEqual({
      origin: 'https://api.example.com',
      path: '/v1',
    });
  });

  it("adds template query parameters after the caller's and drops a caller value of the same name", () => {
    expect(
      target('https://api.example.com', '/proxy/x?q=1&api_key=mine&z=2', [['api_key', 'se cret']]).path,
    ).toBe('/x?q=1&z=2&api_key=se%20cret');
  });

  it.each([
    ['/proxy//evil.com/x'],
    ['/proxy/\\evil.com/x'],
    ['/proxy//\\evil.com'],
    ['/proxy/http://evil.com/x'],
    ['/proxy/https:/evil.com'],
    ['/proxy/HTTP:\\\\evil.com'],
    ['/proxy/a#b'],
  ])('refuses %s, which would leave the provider host', (url) => {
    expect(() => target('https://api.example.com/v3', url)).toThrow(
      expect.objectContaining({ code: 'invalid_uri_params' }),
    );
  });

  it('normalises dot segments and backslashes without ever changing the origin', () => {
    expect(target('https://api.example.com/v3', '/proxy/../admin')).toEqual({
      origin: 'https://api.example.com',
      path: '/admin',
    });
    expect(target('https://api.example.com/v3', '/proxy/%2e%2e/%2e%2e/x').path).toBe('/x');
    expect(target('https://api.example.com/v3', '/proxy/a/..%2fadmin').path).toBe('/v3/a/..%2fadmin');
    expect(target('https://api.example.com/v3', '/proxy/a\\..\\..\\..\\b').origin).toBe(
      'https://api.example.com',
    );
    expect(target('https://api.example.com/v3', '/proxy/%0d%0aHost:%20evil').path).toBe(
      '/v3/%0d%0aHost:%20evil',
    );
  });

  it.each([
    '/users/42',
    "/a/b;c=d/e:f@g/h!$&'()*+,=~",
    '/a//b',
    '/a/.b/..c/.../d.',
    '/a/./b',
    '/a/b/..',
    '/a/%2E%2e/b',
    '/a/b c/ü/{x}/^/`/|',
  ])('gives exactly the path the URL parser gives for %s', (endpoint) => {
    const base = 'https://api.example.com/v3';
    expect(target(base, `/proxy${endpoint}`).path).toBe(new URL(`${base}${endpoint}`).pathname);
  });

  it('refuses a base URL that is not http(s) or carries user:password', () => {
    for (const base of [
      'ftp://x.example.com',
      'file:///etc/passwd',
      'not a url',
      'https://u:p@api.example.com',
    ]) {
      expect(() => buildTarget(base, 'override', '/', undefined)).toThrow(
        expect.objectContaining({ code: 'invalid_headers' }),
      );
    }
  });
});
