import type { ClientCertificate } from '@switchboard/egress';
import type { ResolvedProvider } from '@switchboard/providers';
import {
  expiresAtFrom,
  stringField,
  type ExchangeResult,
  type OAuth2ClientCredentials,
  type OAuth2Credentials,
} from './credentials';
import { ProviderExchangeError, type ExchangeStage } from './exchange.errors';
import { renameParams, tokenAnswer } from './oauth-param-names';
import { callProvider } from './provider-http';
import { interpolateParams, interpolateUrl, optionalConfigFields, type ConnectionConfig } from './templates';
import { valueAtPath } from './value-at-path';

/**
 * OAuth 2 token endpoint calls: authorization code (with PKCE), refresh, client credentials. Each honours
 * the provider's catalog settings: `token_request_auth_method` / `authorization_method` (how the client
 * authenticates), `body_format` (form, json or query), `token_params` / `refresh_params`, `refresh_url`,
 * `token_response_metadata` and `alternate_access_token_response_path`.
 */

export interface OAuth2Client {
  clientId: string;
  clientSecret: string;
}

interface CommonInput {
  provider: ResolvedProvider;
  client: OAuth2Client;
  connectionConfig?: ConnectionConfig;
  /** Per-call limit; the default is DEFAULT_PROVIDER_TIMEOUT_MS. */
  timeoutMs?: number;
  /** The end user's client certificate, for providers with `mutual_tls` (kept with the credentials). */
  clientCertificate?: ClientCertificate;
}

export interface AuthorizationCodeInput extends CommonInput {
  code: string;
  /** Exactly the redirect_uri sent in the authorization request. */
  redirectUri: string;
  /** The PKCE verifier whose S256 challenge went into the authorization URL; omit when the provider disables PKCE. */
  codeVerifier?: string;
  /** The end user brought their own OAuth app (`oauth_client_id_override`); it is kept for later refreshes. */
  clientIsOverride?: boolean;
}

export interface OAuth2RefreshInput extends CommonInput {
  credentials: OAuth2Credentials;
}

export interface ClientCredentialsInput extends CommonInput {
  /** Scopes to request, joined with the provider's separator; none sends no `scope`. */
  scopes?: string[];
}

/** Client-credential tokens that say nothing about their lifetime are re-issued this often (as Nango does). */
export const DEFAULT_CLIENT_CREDENTIALS_LIFETIME_MS = 55 * 60 * 1000;

export async function exchangeAuthorizationCode(
  input: AuthorizationCodeInput,
): Promise<ExchangeResult<OAuth2Credentials>> {
  const connectionConfig = input.connectionConfig ?? {};
  const params: Record<string, string> = {
    grant_type: 'authorization_code',
    ...interpolateParams(input.provider.token_params, connectionConfig),
    code: input.code,
    redirect_uri: input.redirectUri,
    ...(input.codeVerifier ? { code_verifier: input.codeVerifier } : {}),
  };
  const raw = await postTokenRequest(
    input,
    'authorization_code',
    tokenUrl(input.provider, connectionConfig, 'authorization_code'),
    params,
    [input.code, input.codeVerifier],
  );
  const credentials = oauth2CredentialsFrom(raw, input.provider, 'authorization_code');
  if (input.clientIsOverride) {
    credentials.config_override = {
      client_id: input.client.clientId,
      client_secret: input.client.clientSecret,
    };
  }
  return { credentials, connectionConfig: tokenMetadata(raw, input.provider) };
}

/**
 * A refresh_token grant against `refresh_url` (or `token_url`). The end user's own OAuth app
 * (`config_override`) is used when the credentials carry one. A provider that does not rotate refresh
 * tokens returns none, and the current one is kept.
 */
export async function refreshOAuth2Token(
  input: OAuth2RefreshInput,
): Promise<ExchangeResult<OAuth2Credentials>> {
  const { credentials, provider } = input;
  const connectionConfig = input.connectionConfig ?? {};
  if (!credentials.refresh_token) {
    throw new ProviderExchangeError(
      `${provider.name} token refresh failed: the connection has no refresh token`,
      {
        stage: 'refresh',
        failure: 'misconfigured',
        provider: provider.name,
      },
    );
  }
  const override = credentials.config_override;
  const client =
    override?.client_id && override.client_secret
      ? { clientId: override.client_id, clientSecret: override.client_secret }
      : input.client;
  // token_params usually say grant_type=authorization_code; only refresh_params may change the grant.
  const { grant_type: _ignored, ...tokenParams } = provider.refresh_params
    ? {}
    : interpolateParams(provider.token_params, connectionConfig);
  const params: Record<string, string> = {
    grant_type: 'refresh_token',
    ...tokenParams,
    ...interpolateParams(provider.refresh_params, connectionConfig),
    refresh_token: credentials.refresh_token,
  };
  const url = provider.refresh_url
    ? interpolateUrl(provider.refresh_url, connectionConfig, provider)
    : tokenUrl(provider, connectionConfig, 'refresh');
  const raw = await postTokenRequest({ ...input, client }, 'refresh', url, params, [
    credentials.refresh_token,
    credentials.access_token,
  ]);
  const refreshed = oauth2CredentialsFrom(raw, provider, 'refresh');
  if (!refreshed.refresh_token) refreshed.refresh_token = credentials.refresh_token;
  if (override?.client_id && override.client_secret) refreshed.config_override = { ...override };
  return { credentials: refreshed, connectionConfig: tokenMetadata(raw, provider) };
}

/** OAUTH2_CC: a client_credentials grant (or whatever grant the provider's `token_params` name). */
export async function requestClientCredentialsToken(
  input: ClientCredentialsInput,
): Promise<ExchangeResult<OAuth2ClientCredentials>> {
  const { provider } = input;
  const connectionConfig = input.connectionConfig ?? {};
  const params: Record<string, string> = {
    grant_type: 'client_credentials',
    ...interpolateParams(provider.token_params, connectionConfig, optionalConfigFields(provider)),
    ...(input.scopes && input.scopes.length > 0
      ? { scope: input.scopes.join(provider.scope_separator ?? ' ') }
      : {}),
  };
  const raw = await postTokenRequest(
    input,
    'client_credentials',
    tokenUrl(provider, connectionConfig, 'client_credentials'),
    params,
    [],
  );
  const data = raw['data'];
  const token =
    stringField(raw, 'access_token') ??
    (typeof data === 'object' && data !== null
      ? stringField(data as Record<string, unknown>, 'token')
      : undefined) ??
    stringField(raw, 'jwt');
  if (!token) throw missingToken(provider, 'client_credentials');
  const credentials: OAuth2ClientCredentials = {
    type: 'OAUTH2_CC',
    token,
    expires_at:
      expiresAtFrom(raw) ?? new Date(Date.now() + DEFAULT_CLIENT_CREDENTIALS_LIFETIME_MS).toISOString(),
    client_id: input.client.clientId,
    client_secret: input.client.clientSecret,
    ...(input.clientCertificate
      ? {
          client_certificate: input.clientCertificate.cert,
          client_private_key: input.clientCertificate.key,
        }
      : {}),
    raw,
  };
  return { credentials, connectionConfig: tokenMetadata(raw, provider) };
}

function tokenUrl(provider: ResolvedProvider, connectionConfig: ConnectionConfig, stage: ExchangeStage): URL {
  if (!provider.token_url) {
    throw new ProviderExchangeError(`${provider.name} has no token_url in the provider catalog`, {
      stage,
      failure: 'misconfigured',
      provider: provider.name,
    });
  }
  return interpolateUrl(provider.token_url, connectionConfig, provider);
}

async function postTokenRequest(
  input: CommonInput,
  stage: ExchangeStage,
  url: URL,
  params: Record<string, string>,
  extraSecrets: (string | undefined)[],
): Promise<Record<string, unknown>> {
  const { provider, client } = input;
  const headers: Record<string, string> = {};
  const fields = { ...params };
  if (provider.token_request_auth_method === 'basic') {
    // What these providers (Zoom, Reddit, ...) expect, and what Nango sends: the values as they are.
    headers['authorization'] =
      `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}`;
  } else if (provider.authorization_method === 'header') {
    // RFC 6749 §2.3.1: each part form-encoded before base64.
    headers['authorization'] =
      `Basic ${Buffer.from(`${formEncode(client.clientId)}:${formEncode(client.clientSecret)}`).toString('base64')}`;
  } else if (provider.token_request_auth_method === 'custom') {
    fields['username'] = client.clientId;
    fields['password'] = client.clientSecret;
  } else {
    fields['client_id'] = client.clientId;
    fields['client_secret'] = client.clientSecret;
  }

  const named = renameParams(fields, provider.token_param_names);
  let body: string | undefined;
  const format = provider.body_format ?? 'form';
  switch (format) {
    case 'json':
      headers['content-type'] = 'application/json';
      body = JSON.stringify(named);
      break;
    case 'query':
      for (const [key, value] of Object.entries(named)) url.searchParams.set(key, value);
      break;
    case 'form':
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(named).toString();
      break;
    case 'xml':
      throw new ProviderExchangeError(
        `${provider.name}: body_format xml is not supported for OAuth 2 token requests`,
        {
          stage,
          failure: 'misconfigured',
          provider: provider.name,
        },
      );
  }

  const { body: raw } = await callProvider({
    stage,
    provider: provider.name,
    method: 'POST',
    url,
    headers,
    ...(body !== undefined ? { body } : {}),
    secrets: [client.clientSecret, input.clientCertificate?.key, ...extraSecrets],
    ...(input.timeoutMs !== undefined ? { timeoutMs: input.timeoutMs } : {}),
    ...(input.clientCertificate ? { clientCertificate: input.clientCertificate } : {}),
  });
  return tokenAnswer(raw, provider, stage);
}

function oauth2CredentialsFrom(
  raw: Record<string, unknown>,
  provider: ResolvedProvider,
  stage: ExchangeStage,
): OAuth2Credentials {
  let source = raw;
  if (!stringField(raw, 'access_token') && provider.alternate_access_token_response_path) {
    // e.g. Slack with only user scopes: the user's token sits under `authed_user`.
    const nested = valueAtPath(raw, provider.alternate_access_token_response_path);
    if (typeof nested === 'string' && nested !== '') source = { access_token: nested };
    else if (typeof nested === 'object' && nested !== null) source = nested as Record<string, unknown>;
  }
  const accessToken = stringField(source, 'access_token');
  if (!accessToken) throw missingToken(provider, stage);
  const refreshToken = stringField(source, 'refresh_token');
  const expiresAt = expiresAtFrom(source);
  return {
    type: 'OAUTH2',
    access_token: accessToken,
    ...(refreshToken ? { refresh_token: refreshToken } : {}),
    ...(expiresAt ? { expires_at: expiresAt } : {}),
    raw,
  };
}

/** Fields the catalog says belong in the connection config (Salesforce's `instance_url`, Notion's `workspace_id`, ...). */
function tokenMetadata(raw: Record<string, unknown>, provider: ResolvedProvider): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const path of provider.token_response_metadata ?? []) {
    const value = valueAtPath(raw, path);
    if (value !== undefined && value !== null) out[path] = value;
  }
  return out;
}

function missingToken(provider: ResolvedProvider, stage: ExchangeStage): ProviderExchangeError {
  return new ProviderExchangeError(`${provider.name} answered without an access token`, {
    stage,
    failure: 'invalid_response',
    provider: provider.name,
  });
}

function formEncode(value: string): string {
  return encodeURIComponent(value).replace(/%20/g, '+');
}
