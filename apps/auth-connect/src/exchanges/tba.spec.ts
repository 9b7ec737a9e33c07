import { loadCatalog, type ResolvedProvider } from '@switchboard/providers';
import type { AuthConnectError } from '../auth-connect.errors';
import { buildTbaCredentials } from './tba';

describe('TBA credentials (NetSuite from the built-in catalog)', () => {
  const catalog = loadCatalog();
  const netsuiteTba = catalog.get('netsuite-tba') as ResolvedProvider;

  const invalid = (body: unknown, connectionConfig: Record<string, unknown>): AuthConnectError => {
    try {
      buildTbaCredentials(netsuiteTba, body, connectionConfig);
    } catch (error) {
      return error as AuthConnectError;
    }
    throw new Error('expected buildTbaCredentials to refuse the input');
  };

  it('builds the credentials from a token id and secret and an account id', () => {
    expect(
      buildTbaCredentials(
        netsuiteTba,
        { token_id: 'tid', token_secret: 'tsecret' },
        { accountId: '1234567-sb1' },
      ),
    ).toEqual({
      type: 'TBA',
      token_id: 'tid',
      token_secret: 'tsecret',
    });
  });

  it('keeps the end user’s own consumer key and secret as config_override', () => {
    const credentials = buildTbaCredentials(
      netsuiteTba,
      {
        token_id: 'tid',
        token_secret: 'tsecret',
        oauth_client_id_override: 'ck',
        oauth_client_secret_override: 'cs',
      },
      { accountId: '1234567' },
    );
    expect(credentials.config_override).toEqual({ client_id: 'ck', client_secret: 'cs' });
  });

  it('asks for the NetSuite account id', () => {
    const error = invalid({ token_id: 'tid', token_secret: 'tsecret' }, {});
    expect(error.code).toBe('invalid_body');
    expect(error.errors).toEqual([expect.objectContaining({ path: ['connection_config', 'accountId'] })]);
  });

  it('refuses an account id that does not match the catalog pattern', () => {
    const error = invalid({ token_id: 'tid', token_secret: 'tsecret' }, { accountId: 'acme.evil/x' });
    expect(error.errors).toEqual([
      expect.objectContaining({ path: ['connection_config', 'accountId'], code: 'invalid_format' }),
    ]);
  });

  it('lists every problem at once, without echoing what was typed', () => {
    const error = invalid(
      { token_id: '', token_secret: 12345678, oauth_client_id_override: 'only-half-secret' },
      {},
    );
    const paths = error.errors?.map((e) => e.path.join('.'));
    expect(paths).toEqual(
      expect.arrayContaining(['token_id', 'token_secret', 'connection_config.accountId']),
    );
    expect(JSON.stringify(error.toWire())).not.toContain('12345678');
    expect(JSON.stringify(error.toWire())).not.toContain('only-half-secret');
  });

  it('refuses a provider that is not TBA', () => {
    expect(() =>
      buildTbaCredentials(
        catalog.get('netsuite') as ResolvedProvider,
        { token_id: 'a', token_secret: 'b' },
        { accountId: '1' },
      ),
    ).toThrow(/does not use TBA/);
  });
});
