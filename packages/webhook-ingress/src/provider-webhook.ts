import { createHash, createHmac, timingSafeEqual, verify, type KeyObject } from 'node:crypto';
import {
  DEFAULT_JSON_MAX_DEPTH,
  jsonDepthExceeds,
  jsonTooDeepMessage,
  SwitchboardError,
} from '@switchboard/contracts';
import {
  DIGEST_ALGORITHMS,
  PUBLIC_KEY_ALGORITHMS,
  publicKeyFits,
  readPublicKey,
  type WebhookDefinition,
  type WebhookHandshake,
  type WebhookRoutingRule,
  type WebhookSignature,
  type WebhookValueSource,
} from '@switchboard/providers';
import { errors as joseErrors, jwtVerify } from 'jose';

/**
 * The generic engine behind every provider's `webhook` catalog section: parse, locate values, verify a
 * signature, recognise a handshake, find the routing values. Pure functions over one request.
 */

export interface WebhookRequest {
  /** The exact bytes the provider sent: signatures are over these, never over re-serialised JSON. */
  rawBody: Buffer;
  /** Lower-case names. */
  headers: Record<string, string>;
  query: URLSearchParams;
  method: string;
  /** The public URL the provider called, with its query. */
  url: string;
  /** The parsed body (see parseBody). */
  parsed: unknown;
}

/** A webhook body (or a JSON form field of one) nesting deeper than the configured depth. */
export class WebhookBodyTooDeepError extends SwitchboardError {
  constructor(maxDepth: number) {
    super('invalid_body', jsonTooDeepMessage('The webhook body', maxDepth));
  }
}

/**
 * JSON bodies become values; form bodies become an object of fields, and a field holding a JSON object or
 * array is parsed too (Slack's interactivity sends `payload=<json>`). Anything else stays a string.
 * JSON nesting deeper than `maxDepth` is never parsed ({@link WebhookBodyTooDeepError}): every walk of the
 * value after (routing, re-serialisation for a forward) would recurse that deep.
 */
export function parseBody(
  raw: Buffer,
  contentType: string | undefined,
  maxDepth: number = DEFAULT_JSON_MAX_DEPTH,
): unknown {
  const text = raw.toString('utf8');
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (type === 'application/x-www-form-urlencoded') {
    const fields: Record<string, unknown> = {};
    for (const [key, value] of new URLSearchParams(text)) {
      fields[key] = /^\s*[[{]/.test(value) ? (tryJson(value, maxDepth) ?? value) : value;
    }
    return fields;
  }
  if (text.trim() === '') return undefined;
  // Providers are loose about the media type of JSON (text/plain, none at all): try JSON first.
  const json = tryJson(text, maxDepth);
  return json === undefined ? text : json;
}

function tryJson(text: string, maxDepth: number): unknown {
  if (jsonDepthExceeds(text, maxDepth)) throw new WebhookBodyTooDeepError(maxDepth);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Every value at a source: several when a body path walks an array with `*`. Only scalars count. */
export function valuesAt(
  source: WebhookValueSource,
  request: Pick<WebhookRequest, 'headers' | 'query' | 'parsed'>,
): string[] {
  if (source.from === 'header') {
    const value = request.headers[source.path];
    return value === undefined ? [] : [value];
  }
  if (source.from === 'query') return request.query.getAll(source.path);
  let current: unknown[] = [request.parsed];
  for (const segment of source.path.split('.')) {
    const next: unknown[] = [];
    for (const node of current) {
      if (segment === '*') {
        if (Array.isArray(node)) next.push(...(node as unknown[]));
      } else if (node !== null && typeof node === 'object' && !Array.isArray(node)) {
        if (Object.prototype.hasOwnProperty.call(node, segment))
          next.push((node as Record<string, unknown>)[segment]);
      } else if (Array.isArray(node) && /^\d+$/.test(segment)) {
        const element = (node as unknown[])[Number(segment)];
        if (element !== undefined) next.push(element);
      }
    }
    current = next;
  }
  return current.flatMap((value) =>
    typeof value === 'string'
      ? [value]
      : typeof value === 'number' || typeof value === 'boolean'
        ? [String(value)]
        : [],
  );
}

/**
 * The webhook's types, as syncs' `webhookSubscriptions` name them: the values at the provider's
 * `subscription_type` place (or places, for providers that send several body shapes), each once.
 */
export function subscriptionTypesOf(
  definition: Pick<WebhookDefinition, 'subscription_type'> | undefined,
  request: Pick<WebhookRequest, 'headers' | 'query' | 'parsed'>,
): string[] {
  const sources = definition?.subscription_type;
  if (!sources) return [];
  const types = (Array.isArray(sources) ? sources : [sources]).flatMap((source) => valuesAt(source, request));
  return [...new Set(types)];
}

export type SignatureVerdict = { ok: true } | { ok: false; reason: string };
/** A verified webhook; for a JWT-signed one, its claims (what is routed and forwarded). */
export type WebhookVerdict = { ok: true; claims?: Record<string, unknown> } | { ok: false; reason: string };

type PublicKeyAlgorithm = (typeof PUBLIC_KEY_ALGORITHMS)[number];
const isPublicKeyAlgorithm = (algorithm: WebhookSignature['algorithm']): algorithm is PublicKeyAlgorithm =>
  (PUBLIC_KEY_ALGORITHMS as readonly string[]).includes(algorithm);
type DigestAlgorithm = (typeof DIGEST_ALGORITHMS)[number];
const isDigestAlgorithm = (algorithm: WebhookSignature['algorithm']): algorithm is DigestAlgorithm =>
  (DIGEST_ALGORITHMS as readonly string[]).includes(algorithm);

/**
 * The key material a recipe verifies with, from the integration: the `webhook_secret` or client secret for an
 * HMAC; for a public-key algorithm the `webhook_public_key` the integration stores (or a short key stored as
 * its `webhook_secret`, as before that field existed), else the one the catalog pins.
 */
export function verificationKeyOf(
  recipe: WebhookSignature,
  integration: {
    webhookSecret: string | null;
    webhookPublicKey?: string | null;
    clientSecret: string | null;
  },
): string | null {
  if (isPublicKeyAlgorithm(recipe.algorithm))
    return integration.webhookPublicKey ?? integration.webhookSecret ?? recipe.public_key ?? null;
  return recipe.secret === 'client_secret' ? integration.clientSecret : integration.webhookSecret;
}

/** The bytes of an HMAC key: the secret without its `secret_prefix`, decoded per `secret_encoding`. */
export function hmacKey(recipe: WebhookSignature, secret: string): Buffer | undefined {
  const key = hmacKeyText(recipe, secret);
  return key && Buffer.from(key.text, key.encoding);
}

/**
 * An HMAC key as text and the encoding that turns it into {@link hmacKey}'s bytes (undefined when the text
 * is not valid in that encoding). `createHmac` is given the text: for a Buffer key node:crypto first asks
 * whether it is a KeyObject or a CryptoKey, each by throwing and catching an error, on every webhook.
 */
function hmacKeyText(
  recipe: WebhookSignature,
  secret: string,
): { text: string; encoding: 'hex' | 'base64' | 'utf8' } | undefined {
  const prefix = recipe.secret_prefix;
  const unprefixed = prefix && secret.startsWith(prefix) ? secret.slice(prefix.length) : secret;
  const text = unprefixed.trim();
  if (recipe.secret_encoding === 'hex') {
    return /^([0-9a-fA-F]{2})+$/.test(text) ? { text, encoding: 'hex' } : undefined;
  }
  if (recipe.secret_encoding === 'base64') {
    const valid = /^[A-Za-z0-9+/_-]+={0,2}$/.test(text) && Buffer.from(text, 'base64').length > 0;
    return valid ? { text, encoding: 'base64' } : undefined;
  }
  return { text: unprefixed, encoding: 'utf8' };
}

/** The public key of a recipe with a public-key algorithm, if the material is one of the right type. */
function publicKeyFor(algorithm: PublicKeyAlgorithm, material: string): KeyObject | undefined {
  const key = readPublicKey(material);
  return key && publicKeyFits(algorithm, key) ? key : undefined;
}

/**
 * Checks a webhook as its provider signs it: an HMAC or public-key signature in a header (see
 * {@link verifySignature}), or a JSON Web Token (`scheme: jwt`), checked with `jose`. `key` is
 * {@link verificationKeyOf}'s answer.
 */
export async function verifyWebhook(
  recipe: WebhookSignature,
  request: WebhookRequest,
  key: string,
  now: number = Date.now(),
): Promise<WebhookVerdict> {
  if (recipe.scheme !== 'jwt') return verifySignature(recipe, request, key, now);
  let token: string;
  if (recipe.header) {
    const value = request.headers[recipe.header]?.trim();
    if (!value) return { ok: false, reason: `missing ${recipe.header} header` };
    token =
      recipe.prefix && value.startsWith(recipe.prefix) ? value.slice(recipe.prefix.length).trim() : value;
  } else {
    token = request.rawBody.toString('utf8').trim();
  }
  const algorithm = recipe.algorithm;
  let jwtKey: KeyObject | Uint8Array | undefined;
  let jwtAlgorithm: string;
  if (isPublicKeyAlgorithm(algorithm)) {
    jwtKey = publicKeyFor(algorithm, key);
    if (!jwtKey) return { ok: false, reason: `the public key is not a readable ${algorithm} key` };
    jwtAlgorithm = algorithm === 'ed25519' ? 'EdDSA' : 'RS256';
  } else {
    jwtKey = hmacKey(recipe, key);
    if (!jwtKey)
      return { ok: false, reason: `the webhook secret is not ${recipe.secret_encoding ?? 'a key'}` };
    jwtAlgorithm = 'HS256';
  }
  try {
    const { payload } = await jwtVerify(token, jwtKey, {
      algorithms: [jwtAlgorithm],
      currentDate: new Date(now),
      clockTolerance: 5,
    });
    // A token sent as the whole body is the webhook; one in a header only vouches for the body beside it.
    return recipe.header ? { ok: true } : { ok: true, claims: payload as Record<string, unknown> };
  } catch (error) {
    if (error instanceof joseErrors.JWTExpired) return { ok: false, reason: 'the token has expired' };
    if (error instanceof joseErrors.JWSSignatureVerificationFailed)
      return { ok: false, reason: 'signature mismatch' };
    if (error instanceof joseErrors.JOSEAlgNotAllowed)
      return { ok: false, reason: 'the token is not signed with ' + jwtAlgorithm };
    return { ok: false, reason: 'not a valid signed token' };
  }
}

/**
 * Checks the provider's signature in a header with the integration's key, on the raw bytes: an HMAC compared
 * in constant time, or an RSA-SHA256 / Ed25519 signature checked with the provider's public key.
 */
export function verifySignature(
  recipe: WebhookSignature,
  request: WebhookRequest,
  secret: string,
  now: number = Date.now(),
): SignatureVerdict {
  if (!recipe.header || recipe.scheme === 'jwt')
    return { ok: false, reason: 'a jwt is checked by verifyWebhook' };
  const header = request.headers[recipe.header];
  if (!header) return { ok: false, reason: `missing ${recipe.header} header` };

  const { received, signatureParams } = receivedSignatures(recipe, header);
  if (received.length === 0) return { ok: false, reason: 'no signature in the header' };

  const timestamp = signatureTimestamp(recipe, request, signatureParams, now);
  if (typeof timestamp !== 'string') return timestamp;

  const algorithm = recipe.algorithm;
  if (isDigestAlgorithm(algorithm)) {
    const unprefixed =
      recipe.secret_prefix && secret.startsWith(recipe.secret_prefix)
        ? secret.slice(recipe.secret_prefix.length)
        : secret;
    const expected = createHash(algorithm)
      .update(signedPayload(recipe.payload, request, timestamp, unprefixed))
      .digest();
    return matchesAny(received, recipe.encoding, expected)
      ? { ok: true }
      : { ok: false, reason: 'signature mismatch' };
  }
  const message = signedPayload(recipe.payload, request, timestamp);
  if (isPublicKeyAlgorithm(algorithm)) {
    const key = publicKeyFor(algorithm, secret);
    if (!key) return { ok: false, reason: `the public key is not a readable ${algorithm} key` };
    const matches = received.some((candidate) => {
      const signature = decodeDigest(candidate, recipe.encoding);
      if (!signature) return false;
      try {
        return verify(algorithm === 'ed25519' ? null : 'sha256', message, key, signature);
      } catch {
        return false;
      }
    });
    return matches ? { ok: true } : { ok: false, reason: 'signature mismatch' };
  }
  const key = hmacKeyText(recipe, secret);
  if (!key) return { ok: false, reason: `the webhook secret is not ${recipe.secret_encoding ?? 'a key'}` };
  const expected = createHmac(algorithm.slice('hmac-'.length), key.text, { encoding: key.encoding })
    .update(message)
    .digest();
  return matchesAny(received, recipe.encoding, expected)
    ? { ok: true }
    : { ok: false, reason: 'signature mismatch' };
}

/** The signatures a header carries (after the recipe's prefix), and its key-value parameters if it has them. */
function receivedSignatures(
  recipe: WebhookSignature,
  header: string,
): { received: string[]; signatureParams: Map<string, string[]> | undefined } {
  let received: string[];
  let signatureParams: Map<string, string[]> | undefined;
  if (recipe.scheme === 'key-value') {
    signatureParams = new Map();
    for (const part of header.split(',')) {
      const eq = part.indexOf('=');
      if (eq <= 0) continue;
      const key = part.slice(0, eq).trim();
      signatureParams.set(key, [...(signatureParams.get(key) ?? []), part.slice(eq + 1).trim()]);
    }
    received = signatureParams.get(recipe.signature_key ?? '') ?? [];
  } else if (recipe.separator) {
    received = header
      .split(recipe.separator)
      .map((value) => value.trim())
      .filter((value) => value !== '');
  } else {
    received = [header.trim()];
  }
  if (recipe.prefix) {
    const prefix = recipe.prefix;
    received = received.map((value) => (value.startsWith(prefix) ? value.slice(prefix.length) : value));
  }
  return { received, signatureParams };
}

/** The signed timestamp ('' when the recipe signs none), or why it is refused (missing, malformed, too old). */
function signatureTimestamp(
  recipe: WebhookSignature,
  request: WebhookRequest,
  signatureParams: Map<string, string[]> | undefined,
  now: number,
): string | { ok: false; reason: string } {
  const ts = recipe.timestamp;
  if (!ts) return '';
  const raw =
    ts.from === 'header'
      ? request.headers[ts.name]
      : ts.from === 'signature'
        ? signatureParams?.get(ts.name)?.[0]
        : valuesAt({ from: 'body', path: ts.name }, request)[0];
  if (!raw) return { ok: false, reason: 'missing signature timestamp' };
  const at =
    ts.format === 'unix' ? Number(raw) * 1000 : ts.format === 'unix_ms' ? Number(raw) : Date.parse(raw);
  if (!Number.isFinite(at)) return { ok: false, reason: 'malformed signature timestamp' };
  if (Math.abs(now - at) > ts.tolerance_seconds * 1000)
    return { ok: false, reason: 'signature timestamp outside the tolerance' };
  return raw;
}

/** Whether any received digest is the expected one, compared in constant time. */
function matchesAny(received: string[], encoding: 'hex' | 'base64', expected: Buffer): boolean {
  return received.some((candidate) => {
    const decoded = decodeDigest(candidate, encoding);
    return decoded !== undefined && decoded.length === expected.length && timingSafeEqual(decoded, expected);
  });
}

function decodeDigest(value: string, encoding: 'hex' | 'base64'): Buffer | undefined {
  if (encoding === 'hex')
    return /^[0-9a-fA-F]+$/.test(value) && value.length % 2 === 0 ? Buffer.from(value, 'hex') : undefined;
  return /^[A-Za-z0-9+/_-]+={0,2}$/.test(value) ? Buffer.from(value, 'base64') : undefined;
}

/**
 * The bytes a provider signed: the template with `{body}` as the raw bytes (never re-encoded). `{secret}` is
 * filled only for a digest algorithm, the one place the schema allows it.
 */
export function signedPayload(
  template: string,
  request: WebhookRequest,
  timestamp: string,
  secret = '',
): Buffer {
  const parts: Buffer[] = [];
  let last = 0;
  for (const match of template.matchAll(/\{([^{}]*)\}/g)) {
    parts.push(Buffer.from(template.slice(last, match.index), 'utf8'));
    const token = match[1] ?? '';
    if (token === 'body') parts.push(request.rawBody);
    else if (token === 'body_base64') parts.push(Buffer.from(request.rawBody.toString('base64'), 'utf8'));
    else if (token === 'timestamp') parts.push(Buffer.from(timestamp, 'utf8'));
    else if (token === 'method') parts.push(Buffer.from(request.method, 'utf8'));
    else if (token === 'url') parts.push(Buffer.from(request.url, 'utf8'));
    else if (token === 'secret') parts.push(Buffer.from(secret, 'utf8'));
    else if (token.startsWith('header:'))
      parts.push(Buffer.from(request.headers[token.slice('header:'.length)] ?? '', 'utf8'));
    last = (match.index ?? 0) + match[0].length;
  }
  parts.push(Buffer.from(template.slice(last), 'utf8'));
  return Buffer.concat(parts);
}

/** The first handshake whose condition holds. */
export function findHandshake(
  definition: WebhookDefinition | undefined,
  request: WebhookRequest,
): WebhookHandshake | undefined {
  return definition?.handshakes?.find((handshake) => {
    const values = valuesAt(handshake.when.value, request);
    if (values.length === 0) return false;
    if (handshake.when.equals !== undefined && !values.includes(handshake.when.equals)) return false;
    if (handshake.when.sole_key) {
      const parsed = request.parsed;
      if (
        parsed === null ||
        typeof parsed !== 'object' ||
        Array.isArray(parsed) ||
        Object.keys(parsed).length !== 1
      )
        return false;
    }
    return true;
  });
}

/** The answer to a handshake: status, media type and body. */
export function handshakeReply(
  handshake: WebhookHandshake,
  request: WebhookRequest,
): { status: number; contentType: string; body: string } {
  const { respond } = handshake;
  const echoed = respond.echo ? valuesAt(respond.echo, request)[0] : undefined;
  if (respond.content_type === 'application/json') {
    const body = echoed === undefined ? {} : respond.json_key ? { [respond.json_key]: echoed } : echoed;
    return { status: respond.status, contentType: 'application/json', body: JSON.stringify(body) };
  }
  return { status: respond.status, contentType: 'text/plain; charset=utf-8', body: echoed ?? '' };
}

/** `{ field, value }` pairs to look connections up by; duplicates removed. */
export function routingLookups(
  rules: readonly WebhookRoutingRule[],
  request: Pick<WebhookRequest, 'headers' | 'query' | 'parsed'>,
) {
  const seen = new Set<string>();
  const lookups: { field: string; value: string }[] = [];
  for (const rule of rules) {
    for (let value of valuesAt(rule.value, request)) {
      if (rule.strip_prefix && value.startsWith(rule.strip_prefix))
        value = value.slice(rule.strip_prefix.length);
      if (rule.strip_suffix && value.endsWith(rule.strip_suffix))
        value = value.slice(0, -rule.strip_suffix.length);
      if (value === '') continue;
      const key = `${rule.match}\u0000${value}`;
      if (seen.has(key)) continue;
      seen.add(key);
      lookups.push({ field: rule.match, value });
    }
  }
  return lookups;
}
