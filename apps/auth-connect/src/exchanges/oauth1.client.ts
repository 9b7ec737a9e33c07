import { createHmac, createSign } from 'node:crypto';
import type { ResolvedProvider } from '@switchboard/providers';
import OAuth from 'oauth-1.0a';
import { stringField, type OAuth1Credentials } from './credentials';
import { ProviderExchangeError, type ExchangeStage } from './exchange.errors';
import { callProvider } from './provider-http';
import { interpolateParams, interpolateUrl, type ConnectionConfig } from './templates';

/**
 * OAuth 1.0a (RFC 5849) three-legged flow: temporary credentials (request token) → the end user
 * authorizes at the provider → token credentials (access token). Signing is done by `oauth-1.0a`; we
 * only supply the hash for the provider's `signature_method`.
 *
 * For RSA-SHA1 the integration's client secret holds the consumer's PEM private key (there is no shared
 * secret in that method), as Nango does.
 */

export type OAuth1SignatureMethod = 'HMAC-SHA1' | 'RSA-SHA1' | 'PLAINTEXT';

export interface OAuth1Consumer {
  /** The integration's client id (consumer key). */
  key: string;
  /** The integration's client secret (consumer secret), or the PEM private key for RSA-SHA1. */
  secret: string;
}

export interface OAuth1Token {
  key: string;
  secret: string;
}

export interface OAuth1RequestTokenInput {
  provider: ResolvedProvider;
  consumer: OAuth1Consumer;
  /** Where the provider sends the end user back (`oauth_callback`). */
  callbackUrl: string;
  connectionConfig?: ConnectionConfig;
  timeoutMs?: number;
}

export interface OAuth1RequestToken extends OAuth1Token {
  /** The whole answer (some providers add fields such as `oauth_callback_confirmed`). */
  raw: Record<string, unknown>;
}

export interface OAuth1AuthorizeUrlInput {
  provider: ResolvedProvider;
  /** The request token's key (`oauth_token`); its secret stays on the server for the access-token step. */
  requestToken: string;
  /** The integration's scopes, joined with the provider's `scope_separator` (Trello: `read,write`). */
  scopes?: string[];
  /** Request/session `authorization_params`; they replace the catalog's of the same name. */
  authorizationParams?: Record<string, string | undefined>;
  connectionConfig?: ConnectionConfig;
}

export interface OAuth1AccessTokenInput {
  provider: ResolvedProvider;
  consumer: OAuth1Consumer;
  /** The request token from step 1, with its secret. */
  requestToken: OAuth1Token;
  /** `oauth_verifier` from the callback query. */
  verifier: string;
  connectionConfig?: ConnectionConfig;
  timeoutMs?: number;
}

/** Step 1: obtain temporary credentials (RFC 5849 §2.1). */
export async function requestOAuth1RequestToken(input: OAuth1RequestTokenInput): Promise<OAuth1RequestToken> {
  const { provider } = input;
  const url = endpoint(provider, 'request_url', input.connectionConfig ?? {}, 'oauth1_request_token');
  const raw = await signedTokenCall(input, 'oauth1_request_token', url, undefined, {
    oauth_callback: input.callbackUrl,
  });
  const key = stringField(raw, 'oauth_token');
  const secret = stringField(raw, 'oauth_token_secret');
  if (!key || !secret) throw incomplete(provider, 'oauth1_request_token');
  const confirmed = raw['oauth_callback_confirmed'];
  if (confirmed !== undefined && confirmed !== 'true' && confirmed !== true) {
    throw new ProviderExchangeError(`${provider.name} did not confirm the OAuth 1.0a callback URL`, {
      stage: 'oauth1_request_token',
      failure: 'invalid_response',
      provider: provider.name,
    });
  }
  return { key, secret, raw };
}

/** Step 2: where to send the end user (RFC 5849 §2.2). */
export function buildOAuth1AuthorizeUrl(input: OAuth1AuthorizeUrlInput): string {
  const { provider } = input;
  const connectionConfig = input.connectionConfig ?? {};
  const url = endpoint(provider, 'authorization_url', connectionConfig, 'oauth1_request_token');
  url.searchParams.set('oauth_token', input.requestToken);
  if (input.scopes && input.scopes.length > 0)
    url.searchParams.set('scope', input.scopes.join(provider.scope_separator ?? ' '));
  const params = {
    ...interpolateParams(provider.authorization_params, connectionConfig),
    ...input.authorizationParams,
  };
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && key !== 'oauth_token') url.searchParams.set(key, value);
  }
  return url.toString();
}

/** Step 3: trade the verifier for token credentials (RFC 5849 §2.3). */
export async function exchangeOAuth1Verifier(input: OAuth1AccessTokenInput): Promise<OAuth1Credentials> {
  const { provider } = input;
  const url = endpoint(provider, 'token_url', input.connectionConfig ?? {}, 'oauth1_access_token');
  const raw = await signedTokenCall(input, 'oauth1_access_token', url, input.requestToken, {
    oauth_verifier: input.verifier,
  });
  const key = stringField(raw, 'oauth_token');
  const secret = stringField(raw, 'oauth_token_secret');
  if (!key || !secret) throw incomplete(provider, 'oauth1_access_token');
  return { type: 'OAUTH1', oauth_token: key, oauth_token_secret: secret, raw };
}

export interface SignOAuth1RequestInput {
  method: string;
  /** The full URL, query included: query parameters are part of the signature. */
  url: string;
  consumer: OAuth1Consumer;
  /** Omitted for the request-token call; the access token (`oauth_token` / `oauth_token_secret`) afterwards. */
  token?: OAuth1Token;
  signatureMethod?: OAuth1SignatureMethod;
  /** `application/x-www-form-urlencoded` body fields (signed); JSON and other bodies are not part of the signature. */
  form?: Record<string, string>;
  /** Extra protocol parameters (`oauth_callback`, `oauth_verifier`): signed and sent in the header. */
  protocolParams?: Record<string, string>;
  /** NetSuite and a few others want a `realm` in the header; it is never signed. */
  realm?: string;
}

export interface SignedOAuth1Request {
  /** The `Authorization` header value (`OAuth oauth_consumer_key="…", …, oauth_signature="…"`). */
  authorization: string;
  /** The URL to send: the input with its query re-encoded the way it was signed (RFC 3986, `%20` for spaces). */
  url: string;
}

/**
 * Signs one request (RFC 5849 §3.4–3.5.1). This is all the proxy needs to call an OAUTH1 provider with a
 * connection's credentials: pass the exact method, URL and form body it will send, the integration's
 * client id/secret as `consumer` and the connection's `oauth_token` / `oauth_token_secret` as `token`, then
 * send the returned `url` with the returned `authorization` header. A JSON (non-form) body is not signed.
 */
export function signOAuth1Request(input: SignOAuth1RequestInput): SignedOAuth1Request {
  const signatureMethod = input.signatureMethod ?? 'HMAC-SHA1';
  const oauth = new OAuth({
    consumer: {
      key: input.consumer.key,
      secret: signatureMethod === 'RSA-SHA1' ? '' : input.consumer.secret,
    },
    signature_method: signatureMethod,
    hash_function: hashFor(signatureMethod, input.consumer.secret),
    ...(input.realm ? { realm: input.realm } : {}),
  });
  const url = normalisedUrl(input.url);
  const protocolParams = input.protocolParams ?? {};
  const data = oauth.authorize(
    { url, method: input.method, data: { ...input.form, ...protocolParams } },
    input.token,
  );
  return { authorization: oauth.toHeader({ ...data, ...protocolParams }).Authorization, url };
}

/**
 * The library signs the URL text it is given and decodes its query with decodeURIComponent, so a `+` (a
 * space in a query) would be signed as a plus. Re-encoding the query with RFC 3986 rules, and lower-casing
 * the host / dropping a default port (URL does both), makes what we sign match what the server computes.
 */
function normalisedUrl(raw: string): string {
  const url = new URL(raw);
  url.hash = '';
  const pairs = [...url.searchParams];
  url.search =
    pairs.length > 0 ? pairs.map(([key, value]) => `${rfc3986(key)}=${rfc3986(value)}`).join('&') : '';
  return url.toString();
}

function rfc3986(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

function hashFor(method: OAuth1SignatureMethod, consumerSecret: string): OAuth.HashFunction {
  switch (method) {
    case 'HMAC-SHA1':
      return (base, key) => createHmac('sha1', key).update(base).digest('base64');
    case 'RSA-SHA1':
      // The key the library passes is the (empty) shared secret; RSA signs with the consumer's private key.
      return (base) => createSign('RSA-SHA1').update(base).sign(consumerSecret, 'base64');
    case 'PLAINTEXT':
      return (_base, key) => key;
  }
}

async function signedTokenCall(
  input: { provider: ResolvedProvider; consumer: OAuth1Consumer; timeoutMs?: number },
  stage: ExchangeStage,
  url: URL,
  token: OAuth1Token | undefined,
  protocolParams: Record<string, string>,
): Promise<Record<string, unknown>> {
  const { provider, consumer } = input;
  const signed = signOAuth1Request({
    method: 'POST',
    url: url.toString(),
    consumer,
    ...(token ? { token } : {}),
    signatureMethod: provider.signature_method ?? 'HMAC-SHA1',
    protocolParams,
  });
  const { body } = await callProvider({
    stage,
    provider: provider.name,
    method: 'POST',
    url: new URL(signed.url),
    headers: { authorization: signed.authorization },
    secrets: [consumer.secret, token?.secret, protocolParams['oauth_verifier']],
    ...(input.timeoutMs !== undefined ? { timeoutMs: input.timeoutMs } : {}),
  });
  return body;
}

function endpoint(
  provider: ResolvedProvider,
  field: 'request_url' | 'authorization_url' | 'token_url',
  connectionConfig: ConnectionConfig,
  stage: ExchangeStage,
): URL {
  const template = provider[field];
  if (!template) {
    throw new ProviderExchangeError(`${provider.name} has no ${field} in the provider catalog`, {
      stage,
      failure: 'misconfigured',
      provider: provider.name,
    });
  }
  return interpolateUrl(template, connectionConfig, provider);
}

function incomplete(provider: ResolvedProvider, stage: ExchangeStage): ProviderExchangeError {
  return new ProviderExchangeError(`${provider.name} answered without oauth_token and oauth_token_secret`, {
    stage,
    failure: 'invalid_response',
    provider: provider.name,
  });
}
