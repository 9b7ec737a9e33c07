import { AuthConnectError } from '../auth-connect.errors';
import { interpolateParams, interpolateUrl, missingPlaceholders } from './templates';

describe('provider templates', () => {
  it('fills connection config into a URL', () => {
    const url = interpolateUrl('https://${connectionConfig.subdomain}.zendesk.com/oauth/tokens', {
      subdomain: 'acme',
    });
    expect(url.toString()).toBe('https://acme.zendesk.com/oauth/tokens');
  });

  it('takes the first alternative whose placeholders are known', () => {
    const template =
      '${connectionConfig.hostname}/services/oauth2/token || https://login.salesforce.com/services/oauth2/token';
    expect(interpolateUrl(template, {}).toString()).toBe(
      'https://login.salesforce.com/services/oauth2/token',
    );
    expect(interpolateUrl(template, { hostname: 'https://acme.my.salesforce.com' }).toString()).toBe(
      'https://acme.my.salesforce.com/services/oauth2/token',
    );
  });

  it('names every missing field, with a path the caller can show', () => {
    const error = (() => {
      try {
        interpolateUrl('https://${connectionConfig.a}.example.com/${connectionConfig.b}', { a: 'x' });
      } catch (e) {
        return e;
      }
      return undefined;
    })() as AuthConnectError;
    expect(error).toBeInstanceOf(AuthConnectError);
    expect(error.code).toBe('invalid_connection');
    expect(error.errors).toEqual([expect.objectContaining({ path: ['connection_config', 'b'] })]);
  });

  it.each(['evil.example/x?', 'a@evil.example', 'evil.example#', 'x\\@evil.example'])(
    'refuses a host value that would change the URL structure (%s)',
    (subdomain) => {
      expect(() =>
        interpolateUrl('https://${connectionConfig.subdomain}.zendesk.com/oauth/tokens', { subdomain }),
      ).toThrow(AuthConnectError);
    },
  );

  it('refuses non-http schemes', () => {
    expect(() =>
      interpolateUrl('${connectionConfig.instance_url}/api', { instance_url: 'file:///etc/passwd' }),
    ).toThrow(/http\(s\)/);
  });

  it('fills parameter maps and keeps non-string values', () => {
    expect(
      interpolateParams(
        { account_id: '${connectionConfig.accountId}', grant_type: 'account_credentials', n: 3 },
        { accountId: 'A1' },
      ),
    ).toEqual({
      account_id: 'A1',
      grant_type: 'account_credentials',
      n: '3',
    });
    expect(missingPlaceholders('${connectionConfig.x}-${connectionConfig.y}', { x: 'ok', y: '' })).toEqual([
      'y',
    ]);
  });
});
