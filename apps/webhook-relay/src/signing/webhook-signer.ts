import { createHash, createHmac, randomBytes } from 'node:crypto';
import { configure } from 'safe-stable-stringify';
import { Webhook } from 'standardwebhooks';

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

const signers = new Map<string, Webhook>();
/** One Standard Webhooks signer per key (it decodes the key once). */
function signer(key: string): Webhook {
  let found = signers.get(key);
  if (!found) {
    if (signers.size > 10_000) signers.clear();
    found = new Webhook(key);
    signers.set(key, found);
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
  const signatures = [keys.current, ...(keys.previous ? [keys.previous] : [])].map((key) =>
    signer(key).sign(webhookId, at, body),
  );
  return {
    'x-nango-signature': createHash('sha256').update(`${keys.current}${body}`).digest('hex'),
    'x-nango-hmac-sha256': createHmac('sha256', keys.current).update(body).digest('hex'),
    'webhook-id': webhookId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatures.join(' '),
  };
}
