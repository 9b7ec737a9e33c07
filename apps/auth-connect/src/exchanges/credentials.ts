/**
 * Credential shapes as Nango stores and returns them (`@nangohq/types` auth/api.ts). Dates are ISO
 * strings because these objects travel as JSON to the vault. `raw` is the provider's whole answer.
 * Type aliases rather than interfaces, so each one is assignable to the contracts' `Credentials`.
 */

export type ConfigOverride = {
  client_id?: string;
  client_secret?: string;
};

export type OAuth2Credentials = {
  type: 'OAUTH2';
  access_token: string;
  refresh_token?: string;
  expires_at?: string;
  raw: Record<string, unknown>;
  config_override?: ConfigOverride;
};

export type OAuth2ClientCredentials = {
  type: 'OAUTH2_CC';
  token: string;
  expires_at?: string;
  client_id: string;
  client_secret: string;
  /** Mutual TLS (`mutual_tls` providers): PEM certificate and private key presented to the provider. */
  client_certificate?: string;
  client_private_key?: string;
  raw: Record<string, unknown>;
};

export type OAuth1Credentials = {
  type: 'OAUTH1';
  oauth_token: string;
  oauth_token_secret: string;
  raw: Record<string, unknown>;
};

export type AppCredentials = {
  type: 'APP';
  access_token: string;
  expires_at?: string;
  raw: Record<string, unknown>;
  /** The app's own JWT, only when the caller asked for it (`refresh_github_app_jwt_token`). */
  jwtToken?: string;
};

/**
 * GitHub App OAuth: the end user's token and the installation's token, side by side. `user` is absent for
 * a connection imported with only its installation.
 */
export type CustomCredentials = {
  type: 'CUSTOM';
  app: Omit<AppCredentials, 'type'>;
  user?: Omit<OAuth2Credentials, 'type'>;
};

export type TbaCredentials = {
  type: 'TBA';
  token_id: string;
  token_secret: string;
  config_override?: ConfigOverride;
};

export type ExchangedCredentials =
  | OAuth2Credentials
  | OAuth2ClientCredentials
  | OAuth1Credentials
  | AppCredentials
  | CustomCredentials
  | TbaCredentials;

/** An exchange's outcome: the credentials, and values the provider returned that belong in the connection config. */
export interface ExchangeResult<C extends ExchangedCredentials> {
  credentials: C;
  connectionConfig: Record<string, unknown>;
}

/**
 * Expiry from a token response: an absolute `expires_at` (ISO string, or epoch seconds/milliseconds) wins,
 * otherwise `expires_in` seconds from `now`. Anything unparseable means "unknown", never "already expired".
 */
export function expiresAtFrom(raw: Record<string, unknown>, now: Date = new Date()): string | undefined {
  const absolute = raw['expires_at'];
  if (typeof absolute === 'string' && absolute !== '' && !/^\d+$/.test(absolute)) {
    const date = new Date(absolute);
    return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
  }
  const absoluteNumber =
    typeof absolute === 'number' ? absolute : typeof absolute === 'string' ? Number(absolute) : NaN;
  if (Number.isFinite(absoluteNumber) && absoluteNumber > 0) {
    // Epoch seconds until the year 33658; anything larger is milliseconds.
    const ms = absoluteNumber < 1e12 ? absoluteNumber * 1000 : absoluteNumber;
    return new Date(ms).toISOString();
  }
  const relative = raw['expires_in'];
  const seconds =
    typeof relative === 'number' ? relative : typeof relative === 'string' ? Number(relative) : NaN;
  if (Number.isFinite(seconds) && seconds > 0) return new Date(now.getTime() + seconds * 1000).toISOString();
  return undefined;
}

export function stringField(raw: Record<string, unknown>, key: string): string | undefined {
  const value = raw[key];
  return typeof value === 'string' && value !== '' ? value : undefined;
}
