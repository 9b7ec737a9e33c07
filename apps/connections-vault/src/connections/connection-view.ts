import type {
  ApiPublicConnection,
  ApiPublicConnectionFull,
  ConnectionEndUserInput,
  ConnectionError,
  Credentials,
  EndUser,
} from '@switchboard/contracts';
import type { ConnectionRow } from './connections.repository';

/** Nango's public timestamps: `2024-01-01T10:00:00.000+00:00`. */
export const publicTimestamp = (date: Date): string => date.toISOString().replace('Z', '+00:00');

const REFRESH_TOKEN_KEY = /^refresh_?token$/i;

/** Removes every refresh token, at any depth (the provider's raw answer holds one too). */
export function withoutRefreshTokens(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutRefreshTokens);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>)
        .filter(([key]) => !REFRESH_TOKEN_KEY.test(key))
        .map(([key, child]) => [key, withoutRefreshTokens(child)]),
    );
  }
  return value;
}

const errorsOf = (row: ConnectionRow): ConnectionError[] =>
  Array.isArray(row.errors) ? (row.errors as ConnectionError[]) : [];
const endUserOf = (row: ConnectionRow): EndUser | null => (row.endUser as EndUser | null) ?? null;
/** Never-set metadata is `null`; metadata set to `{}` stays `{}` (as Nango answers). */
const metadataOf = (row: ConnectionRow): Record<string, unknown> | null =>
  (row.metadata as Record<string, unknown> | null) ?? null;

export function toPublicConnection(row: ConnectionRow): ApiPublicConnection {
  return {
    id: row.id,
    connection_id: row.connectionId,
    provider_config_key: row.providerConfigKey,
    provider: row.provider,
    errors: errorsOf(row),
    end_user: endUserOf(row),
    tags: (row.tags as Record<string, string> | null) ?? {},
    metadata: metadataOf(row),
    created: publicTimestamp(row.createdAt),
  };
}

/**
 * `credentials` undefined means the caller may not see them: the field is then `{}`. `connectionConfig`
 * is what the caller may see of the config: with credentials, the column plus the sealed secret fields;
 * without, the column with secret fields left out (see SecretConfigFields).
 */
export function toFullConnection(
  row: ConnectionRow,
  credentials: Credentials | undefined,
  includeRefreshToken: boolean,
  connectionConfig: Record<string, unknown> = (row.connectionConfig as Record<string, unknown> | null) ?? {},
): ApiPublicConnectionFull {
  const shown =
    credentials === undefined
      ? {}
      : includeRefreshToken
        ? structuredClone(credentials)
        : withoutRefreshTokens(credentials);
  return {
    id: row.id,
    connection_id: row.connectionId,
    provider_config_key: row.providerConfigKey,
    provider: row.provider,
    errors: errorsOf(row),
    end_user: endUserOf(row),
    tags: (row.tags as Record<string, string> | null) ?? {},
    metadata: metadataOf(row),
    connection_config: connectionConfig,
    webhook_url_override: row.webhookUrlOverride,
    created_at: publicTimestamp(row.createdAt),
    updated_at: publicTimestamp(row.updatedAt),
    last_fetched_at: row.lastFetchedAt ? publicTimestamp(row.lastFetchedAt) : null,
    credentials: shown as Record<string, unknown>,
  };
}

/** The stored end user (`ApiEndUser`) from what a caller sent. */
export function endUserFromInput(input: ConnectionEndUserInput): EndUser {
  return {
    id: input.id,
    display_name: input.display_name ?? null,
    email: input.email ?? null,
    tags: input.tags ?? null,
    organization: input.organization
      ? { id: input.organization.id, display_name: input.organization.display_name ?? null }
      : null,
  };
}
