import {
  publicTimestamp,
  toFullConnection,
  toPublicConnection,
  withoutRefreshTokens,
} from './connection-view';
import type { ConnectionRow } from './connections.repository';

const row = {
  id: 7,
  environmentId: 1,
  connectionId: 'c-1',
  providerConfigKey: 'github',
  provider: 'github',
  credentials: 'sb1.x',
  credentialsExpiresAt: null,
  connectionConfig: { subdomain: 'acme' },
  metadata: null,
  tags: { team: 'core' },
  endUser: null,
  webhookUrlOverride: null,
  errors: [{ type: 'auth', log_id: 'l-1' }],
  refreshLeaseOwner: null,
  refreshLeaseUntil: null,
  lastRefreshSuccess: null,
  lastRefreshFailure: null,
  refreshFailures: 0,
  lastRefreshError: null,
  createdAt: new Date('2024-01-01T10:00:00.000Z'),
  updatedAt: new Date('2024-01-02T10:00:00.000Z'),
  lastFetchedAt: null,
} as ConnectionRow;

describe('connection views', () => {
  it('formats timestamps the way Nango does', () => {
    expect(publicTimestamp(new Date('2024-01-01T10:00:00.000Z'))).toBe('2024-01-01T10:00:00.000+00:00');
    expect(toPublicConnection(row).created).toBe('2024-01-01T10:00:00.000+00:00');
  });

  it('lists a connection without any credentials field', () => {
    expect(Object.keys(toPublicConnection(row)).sort()).toEqual(
      [
        'connection_id',
        'created',
        'end_user',
        'errors',
        'id',
        'metadata',
        'provider',
        'provider_config_key',
        'tags',
      ].sort(),
    );
  });

  it('strips refresh tokens at every depth, under either spelling', () => {
    const credentials = {
      type: 'OAUTH2',
      access_token: 'a',
      refresh_token: 'r',
      raw: { refresh_token: 'r', list: [{ refreshToken: 'r', keep: 1 }] },
    };
    expect(withoutRefreshTokens(credentials)).toEqual({
      type: 'OAUTH2',
      access_token: 'a',
      raw: { list: [{ keep: 1 }] },
    });
    expect(credentials.refresh_token).toBe('r');
    expect(toFullConnection(row, credentials, false).credentials).not.toHaveProperty('refresh_token');
    expect(toFullConnection(row, credentials, true).credentials).toMatchObject({ refresh_token: 'r' });
    expect(toFullConnection(row, undefined, true).credentials).toEqual({});
  });
});
