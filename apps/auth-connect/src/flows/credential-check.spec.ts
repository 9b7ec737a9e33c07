import type { ResolvedProvider } from '@switchboard/providers';
import { AuthConnectError } from '../auth-connect.errors';
import { closeProviderEgress, configureProviderEgress } from '../exchanges/provider-egress';
import { checkCredentials } from './credential-check';

/** An API-key provider whose base URL comes from the connection config, with a verification endpoint. */
const provider = {
  name: 'templated',
  display_name: 'Templated',
  categories: ['other'],
  docs: 'https://example.com/docs',
  auth_mode: 'API_KEY',
  proxy: {
    base_url: 'http://${connectionConfig.host}',
    headers: { authorization: 'Bearer ${apiKey}' },
    verification: { method: 'GET', endpoints: ['/me'] },
  },
  // A self-hosted API-key provider: any host its pattern accepts, the egress policy still applies.
  connection_config: { host: { type: 'string', title: 'Host', pattern: '^[0-9.]+(?::[0-9]+)?$' } },
} as unknown as ResolvedProvider;

describe('checkCredentials', () => {
  beforeAll(() => configureProviderEgress('127.0.0.1'));
  afterAll(() => closeProviderEgress());

  it('refuses, naming why, when the connection config points the check at an address outside the egress policy', async () => {
    // 127.0.0.2 is loopback outside the allow-list: the connector refuses it before any connection.
    const error = await checkCredentials(
      provider,
      { type: 'API_KEY', apiKey: 'typed-secret-key' },
      { host: '127.0.0.2:8443' },
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(AuthConnectError);
    expect(error).toMatchObject({ code: 'connection_test_failed' });
    expect((error as Error).message).toMatch(
      /^The connection config points Templated at an address that may not be called \(.*127\.0\.0\.2.*\)$/,
    );
    expect((error as Error).message).not.toContain('typed-secret-key');
  });
});
