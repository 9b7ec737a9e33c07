import { createPrivateKey } from 'node:crypto';
import type { ResolvedProvider } from '@switchboard/providers';
import { importPKCS8, SignJWT } from 'jose';
import {
  expiresAtFrom,
  stringField,
  type AppCredentials,
  type CustomCredentials,
  type ExchangeResult,
  type OAuth2Credentials,
} from './credentials';
import { ProviderExchangeError, type ExchangeStage } from './exchange.errors';
import { exchangeAuthorizationCode, refreshOAuth2Token, type OAuth2Client } from './oauth2-token.client';
import { callProvider } from './provider-http';
import { interpolateUrl, type ConnectionConfig } from './templates';

/**
 * GitHub App authentication. APP: the app signs a short JWT with its private key and trades it for an
 * installation token (valid one hour). CUSTOM (GitHub App OAuth): an end user's OAuth token plus the
 * installation token of the same app, stored side by side.
 */

export interface GithubApp {
  /** The integration's app_id: the JWT's issuer. */
  appId: string;
  /** The app's PEM private key (PKCS#1 as GitHub hands it out, or PKCS#8). */
  privateKey: string;
}

export interface InstallationTokenInput extends GithubApp {
  provider: ResolvedProvider;
  /** Must hold `installation_id` (from the install callback). */
  connectionConfig: ConnectionConfig;
  /** Also return the app JWT as `jwtToken` (`refresh_github_app_jwt_token=true`). */
  includeJwt?: boolean;
  timeoutMs?: number;
}

export interface GithubAppOAuthInput extends GithubApp {
  provider: ResolvedProvider;
  client: OAuth2Client;
  code: string;
  redirectUri: string;
  codeVerifier?: string;
  connectionConfig: ConnectionConfig;
  timeoutMs?: number;
}

export interface GithubAppOAuthRefreshInput extends GithubApp {
  provider: ResolvedProvider;
  /** Needed only when the user token has a refresh token. */
  client?: OAuth2Client;
  /** The stored credentials; only `user` is read (the installation token is always re-issued). */
  credentials: Pick<CustomCredentials, 'user'>;
  connectionConfig: ConnectionConfig;
  timeoutMs?: number;
}

// GitHub refuses a JWT whose exp is more than 10 minutes ahead; iat is back-dated for clock drift.
const JWT_BACKDATE_SECONDS = 60;
const JWT_LIFETIME_SECONDS = 9 * 60;

/** The app's own JWT (RS256, iss = app id), as GitHub documents for "authenticating as a GitHub App". */
export async function createGithubAppJwt(app: GithubApp, now: Date = new Date()): Promise<string> {
  let key: Awaited<ReturnType<typeof importPKCS8>>;
  try {
    const pkcs8 = createPrivateKey(app.privateKey).export({ type: 'pkcs8', format: 'pem' }).toString();
    key = await importPKCS8(pkcs8, 'RS256');
  } catch {
    // The key's text must never reach a message.
    throw new ProviderExchangeError('The GitHub App private key is not a readable RSA private key', {
      stage: 'app_installation_token',
      failure: 'misconfigured',
      provider: 'github-app',
    });
  }
  const seconds = Math.floor(now.getTime() / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: 'RS256', typ: 'JWT' })
    .setIssuer(app.appId)
    .setIssuedAt(seconds - JWT_BACKDATE_SECONDS)
    .setExpirationTime(seconds + JWT_LIFETIME_SECONDS)
    .sign(key);
}

/** POST /app/installations/{installation_id}/access_tokens with the app JWT → APP credentials. */
export async function fetchInstallationToken(
  input: InstallationTokenInput,
): Promise<ExchangeResult<AppCredentials>> {
  const { provider } = input;
  const installationId = input.connectionConfig['installation_id'];
  const stage: ExchangeStage = 'app_installation_token';
  if (
    (typeof installationId !== 'string' && typeof installationId !== 'number') ||
    !/^\d+$/.test(String(installationId))
  ) {
    throw new ProviderExchangeError(`${provider.name}: the connection has no valid installation_id`, {
      stage,
      failure: 'misconfigured',
      provider: provider.name,
    });
  }
  const jwt = await createGithubAppJwt(input);
  const { body: raw } = await callProvider({
    stage,
    provider: provider.name,
    method: 'POST',
    url: installationTokenUrl(provider, {
      ...input.connectionConfig,
      installation_id: String(installationId),
    }),
    headers: {
      accept: 'application/vnd.github+json',
      authorization: `Bearer ${jwt}`,
      'x-github-api-version': '2022-11-28',
    },
    secrets: [jwt],
    ...(input.timeoutMs !== undefined ? { timeoutMs: input.timeoutMs } : {}),
  });
  const token = stringField(raw, 'token');
  if (!token) {
    throw new ProviderExchangeError(`${provider.name} answered without an installation token`, {
      stage,
      failure: 'invalid_response',
      provider: provider.name,
    });
  }
  const expiresAt = expiresAtFrom(raw);
  const credentials: AppCredentials = {
    type: 'APP',
    access_token: token,
    ...(expiresAt ? { expires_at: expiresAt } : {}),
    raw,
    ...(input.includeJwt ? { jwtToken: jwt } : {}),
  };
  return { credentials, connectionConfig: {} };
}

/** At most this many pages of 100 installations are read when checking an installation. */
const MAX_INSTALLATION_PAGES = 10;

/**
 * Whether the user token can see the installation: GitHub's `GET /user/installations` lists the app's
 * installations the user has access to. The redirect's `installation_id` is only a claim (anyone can edit a
 * query string), so an installation is accepted only when the user who approved it can see it.
 */
export async function verifyInstallationAccess(input: {
  provider: ResolvedProvider;
  userToken: string;
  installationId: string;
  connectionConfig: ConnectionConfig;
  timeoutMs?: number;
}): Promise<void> {
  const { provider } = input;
  const stage: ExchangeStage = 'app_installation_check';
  const template = provider.installation_check?.installations_url;
  const base = template
    ? interpolateUrl(template, input.connectionConfig, provider)
    : provider.proxy?.base_url
      ? new URL(
          `${interpolateUrl(provider.proxy.base_url, input.connectionConfig, provider).toString().replace(/\/$/, '')}/user/installations`,
        )
      : undefined;
  if (!base) {
    throw new ProviderExchangeError(`${provider.name} has no installation_check in the provider catalog`, {
      stage,
      failure: 'misconfigured',
      provider: provider.name,
    });
  }
  for (let page = 1; page <= MAX_INSTALLATION_PAGES; page += 1) {
    const url = new URL(base);
    url.searchParams.set('per_page', '100');
    url.searchParams.set('page', String(page));
    const { body } = await callProvider({
      stage,
      provider: provider.name,
      method: 'GET',
      url,
      headers: {
        accept: 'application/vnd.github+json',
        authorization: `Bearer ${input.userToken}`,
        'x-github-api-version': '2022-11-28',
      },
      secrets: [input.userToken],
      ...(input.timeoutMs !== undefined ? { timeoutMs: input.timeoutMs } : {}),
    });
    const installations = Array.isArray(body['installations']) ? (body['installations'] as unknown[]) : [];
    const ids = installations.map((item) =>
      item && typeof item === 'object' ? String((item as { id?: unknown }).id) : '',
    );
    if (ids.includes(input.installationId)) return;
    if (installations.length < 100) break;
  }
  throw new ProviderExchangeError(
    `The ${provider.display_name} account that approved this cannot see installation ${input.installationId}; nothing was stored`,
    { stage, failure: 'rejected', provider: provider.name },
  );
}

/**
 * APP and CUSTOM at connect time: after the installation the browser is sent to the app's user
 * authorization with this flow's PKCE challenge and state, and the code that comes back (with its verifier)
 * becomes a user token; the token must see the installation, and only then is an installation token
 * minted. A code sent with the install redirect itself is never used for this: nothing ties it to the
 * browser whose flow it came back to (RFC 9700 §4.5, code injection).
 */
async function exchangeCheckedInstallation(
  input: GithubAppOAuthInput,
): Promise<{ user: ExchangeResult<OAuth2Credentials>; app: ExchangeResult<AppCredentials> }> {
  const userProvider = userTokenProvider(input.provider);
  if (!userProvider) {
    throw new ProviderExchangeError(
      `${input.provider.name} has no installation_check in the provider catalog`,
      {
        stage: 'app_installation_check',
        failure: 'misconfigured',
        provider: input.provider.name,
      },
    );
  }
  const user = await exchangeAuthorizationCode({
    provider: userProvider,
    client: input.client,
    code: input.code,
    redirectUri: input.redirectUri,
    ...(input.codeVerifier ? { codeVerifier: input.codeVerifier } : {}),
    connectionConfig: input.connectionConfig,
    ...(input.timeoutMs !== undefined ? { timeoutMs: input.timeoutMs } : {}),
  });
  await verifyInstallationAccess({
    provider: input.provider,
    userToken: user.credentials.access_token,
    installationId: String(input.connectionConfig['installation_id']),
    connectionConfig: input.connectionConfig,
    ...(input.timeoutMs !== undefined ? { timeoutMs: input.timeoutMs } : {}),
  });
  const app = await fetchInstallationToken({ ...input, connectionConfig: input.connectionConfig });
  return { user, app };
}

/**
 * Where a GitHub user code becomes a user token. APP: the app's OAuth token endpoint
 * (`installation_check.token_url`; its own `token_url` mints installation tokens). CUSTOM: its `token_url`,
 * where its user token is refreshed too.
 */
function userTokenProvider(provider: ResolvedProvider): ResolvedProvider | undefined {
  if (provider.auth_mode !== 'APP') return provider;
  const check = provider.installation_check;
  return check ? { ...provider, token_url: check.token_url, token_params: undefined } : undefined;
}

/** APP at connect time: the user token is used only for the check, not kept. */
export async function exchangeGithubAppInstallation(
  input: GithubAppOAuthInput,
): Promise<ExchangeResult<AppCredentials>> {
  return (await exchangeCheckedInstallation(input)).app;
}

/**
 * Makes a user code sent with an install redirect unusable: it is exchanged once (codes are single-use)
 * and the token thrown away. Such a code is never trusted for an installation check, and one left
 * unexchanged could be replayed into another flow within its ten minutes. Failures are ignored: a code
 * GitHub refuses is no use to anyone either.
 */
export async function spendInstallationCode(input: {
  provider: ResolvedProvider;
  client: OAuth2Client;
  code: string;
  redirectUri: string;
  connectionConfig: ConnectionConfig;
  timeoutMs?: number;
}): Promise<void> {
  const provider = userTokenProvider(input.provider);
  if (!provider) return;
  await exchangeAuthorizationCode({
    provider,
    client: input.client,
    code: input.code,
    redirectUri: input.redirectUri,
    connectionConfig: input.connectionConfig,
    ...(input.timeoutMs !== undefined ? { timeoutMs: input.timeoutMs } : {}),
  }).catch(() => undefined);
}

/** CUSTOM at connect time: the user token and the installation token, stored side by side. */
export async function exchangeGithubAppOAuth(
  input: GithubAppOAuthInput,
): Promise<ExchangeResult<CustomCredentials>> {
  const { user, app } = await exchangeCheckedInstallation(input);
  return {
    credentials: customCredentials(app.credentials, user.credentials),
    connectionConfig: { ...user.connectionConfig, ...app.connectionConfig },
  };
}

/** CUSTOM refresh: a new installation token; the user token too when it can be refreshed. */
export async function refreshGithubAppOAuth(
  input: GithubAppOAuthRefreshInput,
): Promise<ExchangeResult<CustomCredentials>> {
  const { user } = input.credentials;
  let refreshedUser: OAuth2Credentials | undefined = user ? { type: 'OAUTH2', ...user } : undefined;
  if (user?.refresh_token) {
    if (!input.client) {
      throw new ProviderExchangeError(`${input.provider.name}: the integration has no client id and secret`, {
        stage: 'refresh',
        failure: 'misconfigured',
        provider: input.provider.name,
      });
    }
    const result = await refreshOAuth2Token({
      provider: input.provider,
      client: input.client,
      credentials: { type: 'OAUTH2', ...user },
      connectionConfig: input.connectionConfig,
      ...(input.timeoutMs !== undefined ? { timeoutMs: input.timeoutMs } : {}),
    });
    refreshedUser = result.credentials;
  }
  const app = await fetchInstallationToken(input);
  return { credentials: customCredentials(app.credentials, refreshedUser), connectionConfig: {} };
}

function customCredentials(app: AppCredentials, user: OAuth2Credentials | undefined): CustomCredentials {
  const { type: _app, ...appRest } = app;
  if (!user) return { type: 'CUSTOM', app: appRest };
  const { type: _user, ...userRest } = user;
  return { type: 'CUSTOM', app: appRest, user: userRest };
}

/**
 * Where installation tokens come from: an APP provider's own `token_url` (it names the installation),
 * otherwise `{proxy.base_url}/app/installations/{installation_id}/access_tokens` (a CUSTOM provider's
 * token_url is the user OAuth endpoint).
 */
export function installationTokenUrl(provider: ResolvedProvider, connectionConfig: ConnectionConfig): URL {
  if (provider.auth_mode === 'APP' && provider.token_url)
    return interpolateUrl(provider.token_url, connectionConfig, provider);
  if (!provider.proxy?.base_url) {
    throw new ProviderExchangeError(
      `${provider.name} has neither an installation token_url nor a proxy base_url`,
      {
        stage: 'app_installation_token',
        failure: 'misconfigured',
        provider: provider.name,
      },
    );
  }
  const base = interpolateUrl(provider.proxy.base_url, connectionConfig, provider)
    .toString()
    .replace(/\/$/, '');
  return new URL(
    `${base}/app/installations/${encodeURIComponent(String(connectionConfig['installation_id']))}/access_tokens`,
  );
}
