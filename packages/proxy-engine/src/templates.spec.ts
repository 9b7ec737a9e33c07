import { interpolate, resolveBaseUrl } from './templates';

const vars = (entries: Record<string, string>) => new Map(Object.entries(entries));

describe('provider templates', () => {
  it('interpolates every placeholder, or reports a missing value', () => {
    const v = vars({ apiKey: 'k1', 'connectionConfig.region': 'eu' });
    expect(interpolate('Bearer ${apiKey}', v)).toBe('Bearer k1');
    expect(interpolate('${connectionConfig.region}-${apiKey}', v)).toBe('eu-k1');
    expect(interpolate('${connectionConfig.missing}', v)).toBeUndefined();
  });

  it('takes the first alternative of A || B whose values all exist', () => {
    const template = 'https://api.${connectionConfig.region}.example.com || https://api.example.com';
    expect(resolveBaseUrl(template, vars({ 'connectionConfig.region': 'eu' }))).toBe(
      'https://api.eu.example.com',
    );
    expect(resolveBaseUrl(template, vars({}))).toBe('https://api.example.com');
    expect(
      resolveBaseUrl(
        '${connectionConfig.instance_url} || https://x.example.com',
        vars({ 'connectionConfig.instance_url': 'https://na1.example.com' }),
      ),
    ).toBe('https://na1.example.com');
  });

  it('refuses connection values that would reshape the URL', () => {
    expect(() =>
      resolveBaseUrl(
        'https://${connectionConfig.sub}.example.com',
        vars({ 'connectionConfig.sub': 'evil.com/x?' }),
      ),
    ).toThrow(expect.objectContaining({ code: 'invalid_connection' }));
    expect(() =>
      resolveBaseUrl(
        'https://${connectionConfig.sub}.example.com',
        vars({ 'connectionConfig.sub': 'a@evil.com' }),
      ),
    ).toThrow();
    expect(() =>
      resolveBaseUrl(
        '${connectionConfig.instance_url}',
        vars({ 'connectionConfig.instance_url': 'javascript:alert(1)' }),
      ),
    ).toThrow();
    expect(() =>
      resolveBaseUrl(
        'https://x.example.com/stores/${connectionConfig.hash}',
        vars({ 'connectionConfig.hash': 'a#b' }),
      ),
    ).toThrow();
    expect(
      resolveBaseUrl(
        'https://x.example.com/stores/${connectionConfig.hash}',
        vars({ 'connectionConfig.hash': 'abc' }),
      ),
    ).toBe('https://x.example.com/stores/abc');
  });

  it('names the problem when no alternative can be built', () => {
    expect(() => resolveBaseUrl('https://${connectionConfig.sub}.example.com', vars({}))).toThrow(/missing/);
  });
});
