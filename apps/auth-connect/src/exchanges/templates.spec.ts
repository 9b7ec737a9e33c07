import { AuthConnectError } from '../auth-connect.errors';
import { interpolateParams, interpolateUrl, missingPlaceholders } from './templates';

const zendesk = { connection_config: { subdomain: { pattern: '^[a-z0-9_-]+$' } } };
const salesforce = {
  connection_config: {
    hostname: { pattern: '^https://(?:[A-Za-z0-9-]+\\.)*salesforce\\.com$' },
    instance_url: { pattern: '^https://(?:[A-Za-z0-9-]+\\.)+salesforce\\.com$' },
  },
};
const open = { connection_config: { a: { pattern: '^[a-z]+$' } } };

describe('provider templates', () => {
  it('fills connection config into a URL', () => {
    const url = interpolateUrl(
      'https://${connectionConfig.subdomain}.zendesk.com/oauth/tokens',
      {
        subdomain: 'acme',
      },
      zendesk,
    );
    expect(url.toString()).toBe('https://acme.zendesk.com/oauth/tokens');
  });

  it('takes the first alternative whose placeholders are known', () => {
    const template =
      '${connectionConfig.hostname}/services/oauth2/token || https://login.salesforce.com/services/oauth2/token';
    expect(interpolateUrl(template, {}, salesforce).toString()).toBe(
      'https://login.salesforce.com/services/oauth2/token',
    );
    expect(
      interpolateUrl(template, { hostname: 'https://acme.my.salesforce.com' }, salesforce).toString(),
    ).toBe('https://acme.my.salesforce.com/services/oauth2/token');
  });

  it('names every missing field, with a path the caller can show', () => {
    const error = (() => {
      try {
        interpolateUrl('https://${connectionConfig.a}.example.com/${connectionConfig.b}', { a: 'x' }, open);
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
        interpolateUrl(
          'https://${connectionConfig.subdomain}.zendesk.com/oauth/tokens',
          { subdomain },
          zendesk,
        ),
      ).toThrow(AuthConnectError);
    },
  );

  it('refuses non-http schemes', () => {
    const fileScheme = { connection_config: { instance_url: { pattern: '^file:' } } };
    expect(() =>
      interpolateUrl(
        '${connectionConfig.instance_url}/api',
        { instance_url: 'file:///etc/passwd' },
        fileScheme,
      ),
    ).toThrow(/http\(s\)/);
  });

  it.each([
    'https://evil.example',
    'https://evil.example/.salesforce.com',
    'https://acme.salesforce.com.evil.example',
  ])('checks a host after substitution even when the template starts with a placeholder (%s)', (value) => {
    expect(() =>
      interpolateUrl(
        '${connectionConfig.instance_url}/services/oauth2/token',
        { instance_url: value },
        salesforce,
      ),
    ).toThrow(/host/);
  });

  it('lets a whole-URL placeholder carry a path, but not a query, fragment or user information', () => {
    const app = { connection_config: { link: { pattern: '^https://github\\.com/apps/[a-z-]+' } } };
    expect(
      interpolateUrl(
        '${connectionConfig.link}/installations/new',
        { link: 'https://github.com/apps/acme' },
        app,
      ).toString(),
    ).toBe('https://github.com/apps/acme/installations/new');
    for (const link of ['https://github.com/apps/acme?x=', 'https://github.com/apps/acme#']) {
      expect(() => interpolateUrl('${connectionConfig.link}/installations/new', { link }, app)).toThrow(
        /host/,
      );
    }
  });

  it('refuses an origin placeholder the catalog does not declare with a pattern', () => {
    expect(() =>
      interpolateUrl(
        '${connectionConfig.server}/token',
        { server: 'https://login.salesforce.com' },
        salesforce,
      ),
    ).toThrow(/host the provider does not use/);
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
