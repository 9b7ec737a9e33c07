import { AuthConnectError } from '../auth-connect.errors';
import type { ResolvedProvider } from '@switchboard/providers';
import { buildConnectionConfig } from './connection-config';

const provider = {
  name: 'acme',
  display_name: 'Acme',
  categories: ['other'],
  docs: 'https://docs.example.com',
  auth_mode: 'OAUTH2',
  authorization_url: 'https://${connectionConfig.subdomain}.acme.example/authorize',
  token_url: 'https://${connectionConfig.subdomain}.acme.example/token',
  connection_config: {
    subdomain: { type: 'string', title: 'Subdomain', pattern: '^[a-z0-9-]+$' },
    region: { type: 'string', title: 'Region', enum: ['eu', 'us', 'eu/v2'], optional: true },
    instance_url: {
      type: 'string',
      title: 'Instance URL',
      format: 'uri',
      pattern: '^https://[a-z0-9-]+\\.acme\\.example$',
      optional: true,
    },
    installation_id: { type: 'string', title: 'Installation', automated: true },
  },
} as unknown as ResolvedProvider;

function errorsOf(fn: () => unknown) {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(AuthConnectError);
    return {
      code: (error as AuthConnectError).code,
      paths: (error as AuthConnectError).errors?.map((e) => e.path),
    };
  }
  throw new Error('expected an error');
}

describe('buildConnectionConfig', () => {
  it("merges the page's params under the session's defaults, leaving client overrides out", () => {
    const config = buildConnectionConfig(
      provider,
      { subdomain: 'from-page' },
      {
        connection_config: {
          subdomain: 'from-session',
          oauth_client_id_override: 'id',
          oauth_client_secret_override: 'secret',
          oauth_scopes_override: 'a',
        },
      },
    );
    expect(config).toEqual({ subdomain: 'from-session' });
  });

  it('refuses params the form does not ask for: undeclared keys and fields the provider fills', () => {
    expect(
      errorsOf(() =>
        buildConnectionConfig(
          provider,
          { subdomain: 'acme', token_url: 'https://evil.example', installation_id: '1' },
          undefined,
        ),
      ),
    ).toEqual({
      code: 'invalid_connection',
      paths: [
        ['params', 'token_url'],
        ['params', 'installation_id'],
      ],
    });
  });

  it("holds the session's defaults to the same host rules", () => {
    expect(
      errorsOf(() =>
        buildConnectionConfig(provider, {}, { connection_config: { subdomain: 'evil.example/x?' } }),
      ).paths,
    ).toEqual([['params', 'subdomain']]);
  });

  it('asks for required fields the end user fills in, but not automated ones', () => {
    expect(errorsOf(() => buildConnectionConfig(provider, {}, undefined))).toEqual({
      code: 'invalid_connection',
      paths: [['params', 'subdomain']],
    });
  });

  it('refuses values that would change the structure of a provider URL', () => {
    for (const subdomain of ['evil.example/x?', 'a b', 'x#y', 'user@host', '%2F']) {
      expect(errorsOf(() => buildConnectionConfig(provider, { subdomain }, undefined)).paths).toEqual([
        ['params', 'subdomain'],
      ]);
    }
    expect(buildConnectionConfig(provider, { subdomain: 'acme-eu' }, undefined)).toEqual({
      subdomain: 'acme-eu',
    });
  });

  it('checks enums and formats', () => {
    expect(
      errorsOf(() => buildConnectionConfig(provider, { subdomain: 'a', region: 'mars' }, undefined)).paths,
    ).toEqual([['params', 'region']]);
    // A value the catalog lists may hold a path (ModMed's host/stage environments); another one may not.
    expect(buildConnectionConfig(provider, { subdomain: 'a', region: 'eu/v2' }, undefined)).toMatchObject({
      region: 'eu/v2',
    });
    expect(
      errorsOf(() => buildConnectionConfig(provider, { subdomain: 'a', region: 'us/v2' }, undefined)).paths,
    ).toEqual([['params', 'region']]);
    expect(
      errorsOf(() =>
        buildConnectionConfig(provider, { subdomain: 'a', instance_url: 'javascript:alert(1)' }, undefined),
      ).paths,
    ).toEqual([['params', 'instance_url']]);
    expect(
      buildConnectionConfig(provider, { subdomain: 'a', instance_url: 'https://x.acme.example' }, undefined),
    ).toMatchObject({ instance_url: 'https://x.acme.example' });
    expect(
      errorsOf(() =>
        buildConnectionConfig(provider, { subdomain: 'a', instance_url: 'https://evil.example' }, undefined),
      ).paths,
    ).toEqual([['params', 'instance_url']]);
  });
});
