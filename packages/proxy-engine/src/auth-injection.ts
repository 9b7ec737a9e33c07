import { createHash, createHmac, createSign, randomBytes } from 'node:crypto';
import type { ConnectionCredentials, ResolvedIntegration } from '@switchboard/contracts';
import type { ClientCertificate } from '@switchboard/egress';
import OAuth from 'oauth-1.0a';
import { awsSigV4Signer, type AwsSigV4Settings, type RequestSigner } from './aws-sigv4';
import { clientCertificateOf } from './client-certificate';
import { ProxyError } from './proxy.errors';
import { interpolate } from './templates';

/** The part of a provider definition the proxy reads (the catalog's `proxy` block and OAuth 1 settings). */
export interface ProviderProxySettings {
  auth_mode: string;
  mutual_tls?: boolean;
  signature_method?: 'HMAC-SHA1' | 'RSA-SHA1' | 'PLAINTEXT';
  proxy?: {
    base_url?: string;
    headers?: Record<string, string>;
    query?: Record<string, string>;
    body?: Record<string, string>;
    retry?: { at?: string[]; after?: string[]; remaining?: string; error_code?: string[] };
    decompress?: boolean;
    aws_sigv4?: AwsSigV4Settings;
  };
}

/**
 * How one connection's credentials go onto a request: headers and query parameters that do not depend
 * on the URL, JSON body fields, and for OAuth 1.0a / TBA a signer run for every URL (each retry and
 * each followed redirect is signed again, with a fresh nonce).
 */
export interface AuthPlan {
  headers: Record<string, string>;
  query: [string, string][];
  bodyFields: Record<string, string> | undefined;
  /** Returns the Authorization header for this exact request; form fields join the signature base. */
  sign:
    | ((method: string, url: string, form: Record<string, string | string[]> | undefined) => string)
    | undefined;
  /** Extra headers computed over the final request (AWS Signature V4), for every attempt and redirect. */
  signRequest?: RequestSigner | undefined;
  /** The client certificate presented in the TLS handshake (providers with `mutual_tls`). */
  clientCertificate?: ClientCertificate | undefined;
  /**
   * Headers computed anew for every request sent (each retry, each followed redirect), e.g. a WSSE
   * digest whose nonce and timestamp must not be replayed.
   */
  perRequest?: (() => Record<string, string>) | undefined;
  /** True when the vault can produce a new token (so a provider 401 is worth one refresh). */
  refreshable: boolean;
}

const str = (v: unknown): string | undefined =>
  typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : undefined;

export function templateVars(
  integration: ResolvedIntegration,
  connection: ConnectionCredentials,
): Map<string, string> {
  const vars = new Map<string, string>();
  const credentials = connection.credentials as Record<string, unknown>;
  for (const [key, value] of Object.entries(credentials)) {
    const s = str(value);
    if (s === undefined) continue;
    vars.set(key, s);
    vars.set(`credentials.${key}`, s);
  }
  for (const [key, value] of Object.entries(connection.connectionConfig)) {
    const s = str(value);
    if (s !== undefined) vars.set(`connectionConfig.${key}`, s);
  }
  const accessToken = str(credentials.access_token) ?? str(credentials.token);
  if (accessToken) vars.set('accessToken', accessToken);
  if (integration.clientId) vars.set('clientId', integration.clientId);
  if (integration.clientSecret) vars.set('clientSecret', integration.clientSecret);
  return vars;
}

/** Header values may not be bent into a second header by a stored value. */
function headerValue(name: string, value: string): string {
  if (/[\r\n\0]/.test(value))
    throw new ProxyError('invalid_connection', `The provider header "${name}" would contain a line break`);
  return value;
}

export function planAuth(
  provider: ProviderProxySettings,
  integration: ResolvedIntegration,
  connection: ConnectionCredentials,
): AuthPlan {
  const credentials = connection.credentials as Record<string, unknown>;
  const type = String(credentials.type ?? provider.auth_mode).toUpperCase();
  const vars = templateVars(integration, connection);
  const headers: Record<string, string> = {};
  let sign: AuthPlan['sign'];
  let refreshable = false;

  const template = provider.proxy?.headers ?? {};
  // A provider whose templates place the token (TikTok's Access-Token, Shopify's X-Shopify-Access-Token,
  // shopVOX's authToken query parameter) takes it only there: an extra Bearer header is not what it
  // documents, and some reject a request carrying both.
  const templateUsesToken = [...Object.values(template), ...Object.values(provider.proxy?.query ?? {})].some(
    (v) => v.includes('${accessToken}'),
  );
  const bearer = (token: string | undefined) => {
    if (token && !templateUsesToken) headers.authorization = `Bearer ${token}`;
  };

  switch (type) {
    case 'BASIC': {
      const user = str(credentials.username) ?? '';
      const pass = str(credentials.password) ?? '';
      headers.authorization = `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
      break;
    }
    case 'OAUTH2':
    case 'APP':
    case 'CUSTOM': {
      bearer(str(credentials.access_token));
      refreshable = type !== 'OAUTH2' || str(credentials.refresh_token) !== undefined;
      break;
    }
    case 'OAUTH2_CC':
    case 'JWT': {
      bearer(str(credentials.token));
      refreshable = true;
      break;
    }
    case 'TWO_STEP': {
      bearer(str(credentials.token));
      refreshable = true;
      break;
    }
    case 'BILL':
      // The provider's templates place the session id and developer key; a 401 means the session ended.
      refreshable = true;
      break;
    case 'OAUTH1':
      sign = oauth1Signer(provider, integration, credentials);
      break;
    case 'TBA':
      sign = tbaSigner(integration, credentials, connection.connectionConfig);
      break;
    default:
      // API_KEY and the rest: the provider's templates below say where the credential goes.
      break;
  }

  let perRequest: AuthPlan['perRequest'];
  if (type === 'SIGNATURE') perRequest = wsseHeaders(template, vars, credentials);
  for (const [name, value] of Object.entries(template)) {
    if (perRequest && value.includes('${accessToken}')) continue;
    const resolved = interpolate(value, vars);
    if (resolved !== undefined) headers[name.toLowerCase()] = headerValue(name, resolved);
  }
  const query: [string, string][] = [];
  for (const [name, value] of Object.entries(provider.proxy?.query ?? {})) {
    const resolved = interpolate(value, vars);
    if (resolved !== undefined) query.push([name, resolved]);
  }
  let bodyFields: Record<string, string> | undefined;
  for (const [name, value] of Object.entries(provider.proxy?.body ?? {})) {
    const resolved = interpolate(value, vars);
    if (resolved !== undefined) (bodyFields ??= {})[name] = resolved;
  }
  const sigv4 = provider.proxy?.aws_sigv4;
  const signRequest = sigv4 ? awsSigV4Signer(sigv4, credentials, vars) : undefined;
  if (signRequest) delete headers.authorization; // the signature replaces the Basic pair
  const clientCertificate = clientCertificateOf(provider, credentials);
  return { headers, query, bodyFields, sign, perRequest, signRequest, clientCertificate, refreshable };
}

/**
 * SIGNATURE (WSSE UsernameToken): every request gets a new nonce and creation time, and
 * PasswordDigest = base64(hex(sha1(nonce + created + password))), the digest Emarsys checks. The provider's
 * header templates say where the token goes (`x-wsse: ${accessToken}`); X-WSSE when none does.
 */
function wsseHeaders(
  template: Record<string, string>,
  vars: Map<string, string>,
  credentials: Record<string, unknown>,
): () => Record<string, string> {
  const username = str(credentials.username);
  const password = str(credentials.password);
  if (!username || password === undefined)
    throw new ProxyError('invalid_connection', 'WSSE signing needs the username and password');
  if (/["\r\n]/.test(username))
    throw new ProxyError('invalid_connection', 'The WSSE username may not contain quotes or line breaks');
  const placed = Object.entries(template).filter(([, value]) => value.includes('${accessToken}'));
  return () => {
    const nonce = randomBytes(16).toString('hex');
    const created = new Date().toISOString();
    const digest = Buffer.from(
      createHash('sha1')
        .update(nonce + created + password)
        .digest('hex'),
    ).toString('base64');
    const token = `UsernameToken Username="${username}", PasswordDigest="${digest}", Nonce="${nonce}", Created="${created}"`;
    if (placed.length === 0) return { 'x-wsse': token };
    const withToken = new Map(vars).set('accessToken', token);
    const out: Record<string, string> = {};
    for (const [name, value] of placed) {
      const resolved = interpolate(value, withToken);
      if (resolved !== undefined) out[name.toLowerCase()] = headerValue(name, resolved);
    }
    return out;
  };
}

function oauth1Signer(
  provider: ProviderProxySettings,
  integration: ResolvedIntegration,
  credentials: Record<string, unknown>,
): AuthPlan['sign'] {
  const key = integration.clientId;
  const secret = integration.clientSecret;
  if (!key || !secret) {
    throw new ProxyError(
      'invalid_connection',
      "OAuth 1.0a signing needs the integration's client_id and client_secret",
    );
  }
  const method = provider.signature_method ?? 'HMAC-SHA1';
  const privateKey = integration.privateKey;
  if (method === 'RSA-SHA1' && !privateKey) {
    throw new ProxyError('invalid_connection', "RSA-SHA1 signing needs the integration's private key");
  }
  const oauth = new OAuth({
    consumer: { key, secret },
    signature_method: method,
    hash_function: (base, signingKey) =>
      method === 'RSA-SHA1'
        ? createSign('RSA-SHA1').update(base).sign(privateKey!, 'base64')
        : method === 'PLAINTEXT'
          ? signingKey
          : createHmac('sha1', signingKey).update(base).digest('base64'),
  });
  const token = {
    key: str(credentials.oauth_token) ?? '',
    secret: str(credentials.oauth_token_secret) ?? '',
  };
  return (httpMethod, url, form) =>
    oauth.toHeader(oauth.authorize({ url, method: httpMethod, data: form ?? {} }, token)).Authorization;
}

/** NetSuite token-based auth: OAuth 1.0a with HMAC-SHA256 and the account id as realm. */
function tbaSigner(
  integration: ResolvedIntegration,
  credentials: Record<string, unknown>,
  config: Record<string, unknown>,
): AuthPlan['sign'] {
  const override = (credentials.config_override ?? {}) as Record<string, unknown>;
  const key = str(override.client_id) ?? integration.clientId ?? str(config.oauth_client_id);
  const secret = str(override.client_secret) ?? integration.clientSecret ?? str(config.oauth_client_secret);
  if (!key || !secret)
    throw new ProxyError('invalid_connection', 'TBA signing needs a client_id and client_secret');
  const account = str(config.accountId);
  const oauth = new OAuth({
    consumer: { key, secret },
    signature_method: 'HMAC-SHA256',
    hash_function: (base, signingKey) => createHmac('sha256', signingKey).update(base).digest('base64'),
    ...(account ? { realm: account.replace(/-/g, '_').toUpperCase() } : {}),
  });
  const token = { key: str(credentials.token_id) ?? '', secret: str(credentials.token_secret) ?? '' };
  return (httpMethod, url, form) =>
    oauth.toHeader(oauth.authorize({ url, method: httpMethod, data: form ?? {} }, token)).Authorization;
}
