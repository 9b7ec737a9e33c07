import { createHash, createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import type { ResolvedProvider } from '@switchboard/providers';
import { SignJWT } from 'jose';
import { AuthConnectError } from '../auth-connect.errors';
import { expiresAtFrom } from './credentials';
import { ProviderExchangeError, type ExchangeStage } from './exchange.errors';
import { callProvider } from './provider-http';
import { interpolateUrl, type ConnectionConfig } from './templates';
import { valueAtPath } from './value-at-path';

/**
 * Modes where Switchboard obtains the token itself from what the end user typed: a JWT it signs (JWT), a
 * token endpoint called with the form's fields (TWO_STEP), Bill's login (BILL). The same functions run at
 * connect time and on every refresh, so a refresh is simply "do it again".
 */

/** The end user's credential fields (the catalog's `credentials` form), as stored with the token. */
export type CredentialFields = Record<string, string>;

export type JwtCredentials = CredentialFields & {
  type: 'JWT';
  token: string;
  expires_at: string;
  /** When this token was obtained: the vault refreshes a token shorter-lived than its margin at half its life. */
  issued_at: string;
};
export type TwoStepCredentials = {
  type: 'TWO_STEP';
  token: string;
  expires_at?: string;
  issued_at: string;
  raw: Record<string, unknown>;
  /** The typed fields, kept to ask again. */
  [field: string]: unknown;
};
export type BillCredentials = {
  type: 'BILL';
  username: string;
  password: string;
  organization_id: string;
  dev_key: string;
  session_id: string;
  user_id?: string;
  expires_at: string;
  issued_at: string;
  raw: Record<string, unknown>;
};
export type SignatureCredentials = { type: 'SIGNATURE'; username: string; password: string };

/** Bill sessions end after 35 minutes without use; a new login before that keeps calls working (`token_expires_in_ms` overrides it). */
export const BILL_SESSION_LIFETIME_MS = 35 * 60_000;
const RESERVED_FIELDS = new Set(['type', 'token', 'expires_at', 'issued_at', 'raw', 'refresh_token']);

/**
 * Checks the typed fields against the provider's `credentials` form: every declared, non-optional field is
 * present and matches its pattern; nothing else is accepted (it would be stored with the secrets).
 */
export function credentialFieldsOf(
  provider: ResolvedProvider,
  body: Record<string, string>,
): CredentialFields {
  const declared = provider.credentials ?? {};
  const out: CredentialFields = {};
  const problems: string[] = [];
  for (const name of Object.keys(body)) {
    if (name === 'type') continue;
    if (!(name in declared) || RESERVED_FIELDS.has(name) || declared[name]?.automated)
      problems.push(`"${name}" is not a credential of ${provider.display_name}`);
  }
  for (const [name, field] of Object.entries(declared)) {
    if (field.automated) continue;
    const value = body[name] ?? field.default_value;
    if (value === undefined || value === '') {
      if (!field.optional) problems.push(`${name} is required`);
      continue;
    }
    if (field.pattern && !new RegExp(field.pattern).test(value))
      problems.push(`${name} has not the expected format`);
    out[name] = value;
  }
  if (problems.length > 0) throw new AuthConnectError('invalid_body', problems.join('; '));
  return out;
}

// ---- templates over the typed credentials ------------------------------------------------------

const PLACEHOLDER = /\$\{([^{}]*)\}/g;

function valueOf(name: string, fields: CredentialFields, config: ConnectionConfig): string | undefined {
  const call = /^([a-zA-Z0-9]+)\((.*)\)$/.exec(name.trim());
  if (call) {
    const [, fn, argument = ''] = call;
    if (fn === 'dateInDays') {
      const days = Number(argument);
      if (!Number.isInteger(days)) return undefined;
      return new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10);
    }
    if (fn === 'base64') {
      // `base64(credentials.a:credentials.b)`: a Basic pair for the token call (Jamf, Heap, Workday, ...).
      const parts = argument.split(':').map((part) => valueOf(part, fields, config));
      if (parts.some((part) => part === undefined)) return undefined;
      return Buffer.from(parts.join(':')).toString('base64');
    }
    const inner = valueOf(argument, fields, config);
    if (inner === undefined) return undefined;
    if (fn === 'upper') return inner.toUpperCase();
    if (fn === 'fingerprint') return publicKeyFingerprint(inner);
    return undefined;
  }
  if (name.startsWith('connectionConfig.')) {
    const value = config[name.slice('connectionConfig.'.length)];
    return typeof value === 'string' && value !== ''
      ? value
      : typeof value === 'number'
        ? String(value)
        : undefined;
  }
  if (name.startsWith('credentials.')) {
    const path = name.slice('credentials.'.length);
    const direct = fields[path];
    if (direct !== undefined && direct !== '') return direct;
    // `x.id` / `x.secret`: the two halves of an `id:secret` value (Ghost's admin API key).
    const part = /^(.+)\.(id|secret)$/.exec(path);
    if (part) {
      const whole = fields[part[1] ?? ''];
      const colon = whole?.indexOf(':') ?? -1;
      if (whole && colon > 0) return part[2] === 'id' ? whole.slice(0, colon) : whole.slice(colon + 1);
    }
  }
  return undefined;
}

const BASE64_OPEN = '${base64(';

/**
 * Fills a template; undefined when one placeholder has no value. `${base64(...)}` may also wrap a template
 * of its own (`${base64(${connectionConfig.tenant}+${credentials.client_id}:${credentials.client_secret})}`,
 * ConnectSecure's client-auth-token): it is filled first, then encoded. Values are never read as templates.
 */
export function fillFieldTemplate(
  template: string,
  fields: CredentialFields,
  config: ConnectionConfig,
): string | undefined {
  let out = '';
  let rest = template;
  for (let start = rest.indexOf(BASE64_OPEN); start >= 0; start = rest.indexOf(BASE64_OPEN)) {
    const end = closingOf(rest, start + BASE64_OPEN.length);
    if (end === undefined) break;
    const inner = rest.slice(start + BASE64_OPEN.length, end);
    const head = fillPlaceholders(rest.slice(0, inner.includes('${') ? start : end + 2), fields, config);
    if (head === undefined) return undefined;
    if (inner.includes('${')) {
      const value = fillPlaceholders(inner, fields, config);
      if (value === undefined) return undefined;
      out += head + Buffer.from(value).toString('base64');
    } else out += head; // the `base64(credentials.a:credentials.b)` form, filled as one placeholder
    rest = rest.slice(end + 2);
  }
  const tail = fillPlaceholders(rest, fields, config);
  return tail === undefined ? undefined : out + tail;
}

/** Index of the `)}` closing a `${base64(` whose argument starts at `from` (nested `${...}` skipped). */
function closingOf(text: string, from: number): number | undefined {
  let depth = 0;
  for (let i = from; i < text.length; i++) {
    if (text.startsWith('${', i)) {
      depth++;
      i++;
    } else if (text[i] === '}' && depth > 0) depth--;
    else if (depth === 0 && text.startsWith(')}', i)) return i;
  }
  return undefined;
}

function fillPlaceholders(
  template: string,
  fields: CredentialFields,
  config: ConnectionConfig,
): string | undefined {
  let missing = false;
  const out = template.replace(PLACEHOLDER, (_m, name: string) => {
    const value = valueOf(name, fields, config);
    if (value === undefined) missing = true;
    return value ?? '';
  });
  return missing ? undefined : out;
}

/**
 * A PEM key as typed: a one-line input (the connect page's password field drops line breaks) or one with
 * literal `\n`s is put back into lines of 64 characters, which the key parser needs.
 */
export function normalizePem(text: string): string {
  const unescaped = text.replace(/\\n/g, '\n').trim();
  const match = /^(-----BEGIN [A-Z0-9 ]+-----)([\s\S]*?)(-----END [A-Z0-9 ]+-----)$/.exec(unescaped);
  if (!match) return unescaped;
  const body = (match[2] ?? '').replace(/\s+/g, '');
  const lines = body.match(/.{1,64}/g) ?? [];
  return [match[1], ...lines, match[3], ''].join('\n');
}

/** Snowflake's key-pair issuer suffix: `SHA256:` + base64 SHA-256 of the DER public key. */
function publicKeyFingerprint(pem: string): string | undefined {
  try {
    const der = createPublicKey(createPrivateKey(normalizePem(pem))).export({ type: 'spki', format: 'der' });
    return `SHA256:${createHash('sha256').update(der).digest('base64')}`;
  } catch {
    return undefined;
  }
}

// ---- JWT ---------------------------------------------------------------------------------------

const JWT_ALGORITHMS = { RSA: 'RS256', HMAC: 'HS256', EC: 'ES256' } as const;

/** Signs a new JWT from the provider's `token` template and the end user's key; `stage` names the failure. */
export async function mintJwt(
  provider: ResolvedProvider,
  fields: CredentialFields,
  connectionConfig: ConnectionConfig,
  stage: ExchangeStage = 'jwt_signing',
): Promise<JwtCredentials> {
  const spec = provider.token;
  const protocol = provider.signature?.protocol;
  if (!spec || !protocol || protocol === 'WSSE')
    throw misconfigured(provider, stage, 'has no JWT token template');
  const alg = JWT_ALGORITHMS[protocol];
  const keyText = fillFieldTemplate(spec.signing_key, fields, connectionConfig);
  if (!keyText) throw rejected(provider, stage, 'the signing key is missing');
  let key: KeyObject | Uint8Array;
  try {
    if (protocol === 'HMAC') {
      key = Buffer.from(keyText, spec.signing_key_encoding === 'hex' ? 'hex' : 'utf8');
      if (key.length === 0) throw new Error('empty key');
    } else {
      key = createPrivateKey(normalizePem(keyText));
      const type = key.asymmetricKeyType;
      if ((protocol === 'RSA' && type !== 'rsa') || (protocol === 'EC' && type !== 'ec'))
        throw new Error('wrong key type');
    }
  } catch {
    // Never the key itself, nor the parser's message (it may quote it).
    throw rejected(provider, stage, `the private key is not a valid ${protocol} key`);
  }

  const header: Record<string, string> = {};
  for (const [name, template] of Object.entries(spec.header ?? {})) {
    const value = fillFieldTemplate(template, fields, connectionConfig);
    if (value === undefined) throw rejected(provider, stage, `the JWT header ${name} cannot be filled`);
    header[name] = value;
  }
  const payload: Record<string, string | string[]> = {};
  for (const [claim, template] of Object.entries(spec.payload ?? {})) {
    // A claim whose value is missing is left out (Apple's optional scope).
    if (Array.isArray(template)) {
      const values = template
        .map((t) => fillFieldTemplate(t, fields, connectionConfig))
        .filter((v): v is string => v !== undefined && v !== '');
      if (values.length > 0) payload[claim] = values;
    } else {
      const value = fillFieldTemplate(template, fields, connectionConfig);
      if (value !== undefined) payload[claim] = value;
    }
  }
  const now = Math.floor(Date.now() / 1000);
  const expiresAt = now + Math.floor(spec.expires_in_ms / 1000);
  const token = await new SignJWT(payload)
    .setProtectedHeader({ ...header, alg })
    .setIssuedAt(now)
    .setExpirationTime(expiresAt)
    .sign(key);
  return {
    ...fields,
    type: 'JWT',
    token,
    expires_at: new Date(expiresAt * 1000).toISOString(),
    issued_at: new Date(now * 1000).toISOString(),
  };
}

// ---- TWO_STEP ----------------------------------------------------------------------------------

/** Calls the provider's token endpoint with the form's fields and reads the token (and expiry) it answers. */
export async function requestTwoStepToken(input: {
  provider: ResolvedProvider;
  fields: CredentialFields;
  connectionConfig: ConnectionConfig;
  stage?: ExchangeStage;
  timeoutMs?: number;
}): Promise<TwoStepCredentials> {
  const { provider, fields, connectionConfig } = input;
  const stage = input.stage ?? 'two_step_token';
  const response = provider.token_response;
  if (!provider.token_url || !response)
    throw misconfigured(provider, stage, 'has no token_url or token_response');
  const url = interpolateUrl(provider.token_url, connectionConfig, provider);
  // A JWT-bearer grant (Google service accounts): the token call carries a JWT signed with the typed key.
  const assertion =
    provider.signature && provider.token
      ? (await mintJwt(provider, fields, connectionConfig, stage)).token
      : undefined;
  const withAssertion = (template: string) =>
    assertion === undefined ? template : template.split('${jwt}').join(assertion);
  // Numbers and booleans of the catalog stay typed in a JSON body; forms and queries carry their text.
  const params: Record<string, string | number | boolean> = {};
  for (const [name, template] of Object.entries(provider.token_params ?? {})) {
    const value =
      typeof template === 'string'
        ? fillFieldTemplate(withAssertion(template), fields, connectionConfig)
        : template;
    if (value === undefined) throw rejected(provider, stage, `the token parameter ${name} cannot be filled`);
    params[name] = value;
  }
  const headers: Record<string, string> = {};
  for (const [name, template] of Object.entries(provider.token_headers ?? {})) {
    const value = fillFieldTemplate(template, fields, connectionConfig);
    if (value !== undefined) headers[name.toLowerCase()] = value;
  }
  let body: string | undefined;
  const method = provider.token_request_method ?? 'POST';
  switch (method === 'GET' ? 'query' : (provider.body_format ?? 'json')) {
    case 'form':
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(
        Object.entries(params).map(([name, value]): [string, string] => [name, String(value)]),
      ).toString();
      break;
    case 'query':
      for (const [name, value] of Object.entries(params)) url.searchParams.set(name, String(value));
      break;
    case 'json':
      headers['content-type'] = 'application/json';
      body = JSON.stringify(params);
      break;
    case 'xml':
      throw misconfigured(provider, stage, 'body_format xml is not supported for TWO_STEP');
  }
  const issuedAt = new Date().toISOString();
  const { body: raw } = await callProvider({
    stage,
    provider: provider.name,
    method,
    url,
    headers,
    ...(body !== undefined ? { body } : {}),
    secrets: Object.values(fields),
    ...(input.timeoutMs !== undefined ? { timeoutMs: input.timeoutMs } : {}),
  });
  const token = valueAtPath(raw, response.token);
  if (typeof token !== 'string' || token === '')
    throw invalidAnswer(provider, stage, 'answered without a token');
  const expiresAt = twoStepExpiry(raw, provider);
  return {
    ...fields,
    type: 'TWO_STEP',
    token,
    issued_at: issuedAt,
    ...(expiresAt ? { expires_at: expiresAt } : {}),
    raw,
  };
}

/**
 * The token answer's fields the catalog keeps on the connection (`token_response_metadata`, e.g.
 * ConnectSecure's `user_id`, sent as `x-user-id` with every call), read anew on each token call.
 */
export function twoStepConnectionConfig(
  provider: ResolvedProvider,
  raw: Record<string, unknown>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const path of provider.token_response_metadata ?? []) {
    const value = valueAtPath(raw, path);
    if (typeof value === 'string' || typeof value === 'number') out[path] = String(value);
  }
  return out;
}

function twoStepExpiry(raw: Record<string, unknown>, provider: ResolvedProvider): string | undefined {
  const response = provider.token_response;
  if (response?.token_expiration) {
    const value = valueAtPath(raw, response.token_expiration);
    const parsed =
      response.token_expiration_strategy === 'expireAt'
        ? expiresAtFrom({ expires_at: value })
        : expiresAtFrom({ expires_in: value });
    if (parsed) return parsed;
  }
  return provider.token_expires_in_ms
    ? new Date(Date.now() + provider.token_expires_in_ms).toISOString()
    : undefined;
}

// ---- BILL --------------------------------------------------------------------------------------

/** Bill's login: username, password, organization id and developer key give a session id. */
export async function billLogin(input: {
  provider: ResolvedProvider;
  login: { username: string; password: string; organization_id: string; dev_key: string };
  stage?: ExchangeStage;
  timeoutMs?: number;
}): Promise<BillCredentials> {
  const { provider, login } = input;
  const stage = input.stage ?? 'bill_login';
  if (!provider.token_url) throw misconfigured(provider, stage, 'has no token_url');
  const { body: raw } = await callProvider({
    stage,
    provider: provider.name,
    method: 'POST',
    url: interpolateUrl(provider.token_url, {}, provider),
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      username: login.username,
      password: login.password,
      organizationId: login.organization_id,
      devKey: login.dev_key,
    }),
    secrets: [login.password, login.dev_key],
    ...(input.timeoutMs !== undefined ? { timeoutMs: input.timeoutMs } : {}),
  });
  const sessionId = raw['sessionId'];
  if (typeof sessionId !== 'string' || sessionId === '')
    throw invalidAnswer(provider, stage, 'answered without a sessionId');
  const userId = raw['userId'];
  const issuedAt = Date.now();
  return {
    type: 'BILL',
    ...login,
    session_id: sessionId,
    ...(typeof userId === 'string' ? { user_id: userId } : {}),
    expires_at: new Date(issuedAt + (provider.token_expires_in_ms ?? BILL_SESSION_LIFETIME_MS)).toISOString(),
    issued_at: new Date(issuedAt).toISOString(),
    raw,
  };
}

// ---- paths and errors ------------------------------------------------------------------------

function misconfigured(
  provider: ResolvedProvider,
  stage: ExchangeStage,
  reason: string,
): ProviderExchangeError {
  return new ProviderExchangeError(`${provider.name} ${reason}`, {
    stage,
    failure: 'misconfigured',
    provider: provider.name,
  });
}
function rejected(provider: ResolvedProvider, stage: ExchangeStage, reason: string): ProviderExchangeError {
  return new ProviderExchangeError(`${provider.display_name}: ${reason}`, {
    stage,
    failure: 'rejected',
    provider: provider.name,
  });
}
function invalidAnswer(
  provider: ResolvedProvider,
  stage: ExchangeStage,
  reason: string,
): ProviderExchangeError {
  return new ProviderExchangeError(`${provider.display_name} ${reason}`, {
    stage,
    failure: 'invalid_response',
    provider: provider.name,
  });
}
