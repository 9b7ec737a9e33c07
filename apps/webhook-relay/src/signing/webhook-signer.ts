import { createHash, createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import { configure } from 'safe-stable-stringify';

// Nango serialises with safe-stable-stringify: compact, keys sorted recursively. The official client's
// legacy check re-serialises the parsed body with JSON.stringify, which reproduces exactly this text.
const stableStringify = configure({ deterministic: true, circularValue: Error, bigint: true });

export function serializeBody(payload: unknown): string {
  const text = stableStringify(payload);
  if (text === undefined) throw new Error('payload is not serialisable');
  return text;
}

/** A Standard Webhooks secret: `whsec_` + base64 of 32 random bytes. */
export function generateSigningKey(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * The HMAC keys of one signing key, prepared once: the Standard Webhooks key (the base64 after `whsec_`,
 * decoded) and the Nango key (the key string's own bytes). Node's HMAC (OpenSSL) rather than the
 * standardwebhooks package's pure-JS SHA-256 (≈ 90 µs against ≈ 17 µs for a 1 KB body, measured
 * on a loaded host); the specification
 * vector and the package's own `verify` check the output (webhook-signer.spec.ts).
 */
interface PreparedKey {
  standard: KeyObject;
  nango: KeyObject;
}
const prepared = new Map<string, PreparedKey>();
function prepare(key: string): PreparedKey {
  let found = prepared.get(key);
  if (!found) {
    const encoded = key.startsWith('whsec_') ? key.slice('whsec_'.length) : key;
    const standard = Buffer.from(encoded, 'base64');
    if (standard.length === 0) throw new Error("Secret can't be empty.");
    if (prepared.size > 10_000) prepared.clear();
    found = { standard: createSecretKey(standard), nango: createSecretKey(Buffer.from(key, 'utf8')) };
    prepared.set(key, found);
  }
  return found;
}

export interface SignedHeaders {
  'x-nango-signature': string;
  'x-nango-hmac-sha256': string;
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/**
 * The headers of one attempt. `X-Nango-Hmac-Sha256` is what `@nangohq/node`'s
 * `verifyIncomingWebhookRequest` checks (HMAC keyed with the key string itself); `X-Nango-Signature` is
 * its deprecated `sha256(key ‖ body)`; `webhook-*` follow Standard Webhooks (HMAC keyed with the
 * base64-decoded secret over `id.timestamp.body`). While a rotated-out key is still in its grace period,
 * `webhook-signature` carries one signature per key so receivers on either key accept the message.
 * The Nango headers have room for one value and use the current key.
 */
export function signDelivery(
  body: string,
  webhookId: string,
  keys: { current: string; previous?: string | null },
  at: Date = new Date(),
): SignedHeaders {
  const timestamp = Math.floor(at.getTime() / 1000);
  const signed = `${webhookId}.${timestamp}.${body}`;
  const current = prepare(keys.current);
  const standard = (key: PreparedKey) =>
    `v1,${createHmac('sha256', key.standard).update(signed).digest('base64')}`;
  const signatures = keys.previous
    ? `${standard(current)} ${standard(prepare(keys.previous))}`
    : standard(current);
  return {
    'x-nango-signature': createHash('sha256').update(keys.current).update(body).digest('hex'),
    'x-nango-hmac-sha256': createHmac('sha256', current.nango).update(body).digest('hex'),
    'webhook-id': webhookId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatures,
  };
}
