import { createPublicKey } from 'node:crypto';
import { z } from 'zod';

/**
 * The `webhook` section of a provider: how Switchboard checks a webhook the provider sends, answers its
 * handshakes, finds the provider's delivery id, and routes the webhook to connections. It is data, read
 * by one generic engine in webhook-relay, so adding a provider never needs code.
 *
 * Values are located with a source and a path:
 * - `body`: the parsed body (JSON, or form fields; a form field holding JSON, like Slack's `payload`, is
 *   parsed too). Paths are dot-separated; `*` walks every element of an array.
 * - `header`: a request header (lower-case name); `query`: a query parameter.
 */

const LOWER_HEADER = /^[a-z0-9!#$%&'*+.^_`|~-]+$/;
const headerName = z.string().regex(LOWER_HEADER, 'must be a lower-case HTTP header name');
const valuePath = z
  .string()
  .regex(
    /^(\*|[A-Za-z0-9_$@-]+)(\.(\*|[A-Za-z0-9_$@-]+))*$/,
    'must be a dot path (`*` for every array element)',
  );

export const WebhookValueSourceSchema = z
  .strictObject({
    from: z.enum(['body', 'header', 'query']),
    /** A dot path in the body, or the header / query parameter name. */
    path: z.string().min(1),
  })
  .superRefine((value, ctx) => {
    const ok =
      value.from === 'header' ? LOWER_HEADER.test(value.path) : valuePath.safeParse(value.path).success;
    if (!ok)
      ctx.addIssue({
        code: 'custom',
        path: ['path'],
        message:
          value.from === 'header'
            ? 'must be a lower-case HTTP header name'
            : 'must be a dot path (`*` for every array element)',
      });
  });
export type WebhookValueSource = z.infer<typeof WebhookValueSourceSchema>;

/**
 * `{body}` (raw bytes), `{body_base64}` (the raw bytes, base64: Follow Up Boss signs that), `{timestamp}`
 * (the value found by `timestamp`), `{method}`, `{url}` (the public URL the provider called, with its query),
 * `{header:<name>}` and, for a digest algorithm only, `{secret}` (the integration's secret, as text); anything
 * else is literal text.
 */
const signedPayloadTemplate = z.string().superRefine((value, ctx) => {
  for (const match of value.matchAll(/\{([^{}]*)\}/g)) {
    const token = match[1] ?? '';
    if (!/^(body|body_base64|timestamp|method|url|secret|header:[a-z0-9!#$%&'*+.^_`|~-]+)$/.test(token)) {
      ctx.addIssue({
        code: 'custom',
        message: `unknown placeholder {${token}}; use {body}, {body_base64}, {timestamp}, {method}, {url}, {secret} or {header:<name>}`,
      });
    }
  }
  if (!value.includes('{body}') && !value.includes('{body_base64}'))
    ctx.addIssue({ code: 'custom', message: 'must include {body} or {body_base64}' });
});

export const WebhookTimestampSchema = z.strictObject({
  /** `signature` = a key of a key-value signature header (Stripe's `t`). */
  from: z.enum(['header', 'body', 'signature']),
  /** Header name, body path or signature key. */
  name: z.string().min(1),
  format: z.enum(['unix', 'unix_ms', 'iso8601']),
  /** Older or newer than this and the webhook is refused as a replay. */
  tolerance_seconds: z.number().int().positive().max(86_400),
});

/** Signed with a key the provider and the integration share. */
export const HMAC_ALGORITHMS = ['hmac-sha256', 'hmac-sha1', 'hmac-sha512'] as const;
/** Signed with the provider's private key, checked with its public key. */
export const PUBLIC_KEY_ALGORITHMS = ['rsa-sha256', 'ed25519'] as const;
/**
 * Not signed but hashed: a plain digest of the signed payload, which mixes the shared secret in as `{secret}`
 * (Recharge sends the SHA-256 of its client secret followed by the body).
 */
export const DIGEST_ALGORITHMS = ['sha256', 'sha1', 'sha512'] as const;
const PUBLIC_KEY_TYPE = { 'rsa-sha256': 'rsa', ed25519: 'ed25519' } as const;

/**
 * A public key as the catalog pins it or an integration stores it: PEM (`-----BEGIN PUBLIC KEY-----`) or the
 * base64 of its DER SubjectPublicKeyInfo (what providers often publish on one line). Undefined if unreadable.
 */
export function readPublicKey(value: string): ReturnType<typeof createPublicKey> | undefined {
  try {
    const text = value.trim();
    if (text.startsWith('-----BEGIN')) return createPublicKey(text);
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text)) return undefined;
    return createPublicKey({ key: Buffer.from(text, 'base64'), format: 'der', type: 'spki' });
  } catch {
    return undefined;
  }
}

/** Whether a public key fits a signature algorithm (an RSA key for `rsa-sha256`, ...). */
export function publicKeyFits(
  algorithm: (typeof PUBLIC_KEY_ALGORITHMS)[number],
  key: ReturnType<typeof createPublicKey>,
): boolean {
  return key.asymmetricKeyType === PUBLIC_KEY_TYPE[algorithm];
}

export const WebhookSignatureSchema = z
  .strictObject({
    /** Where the signature is. Only a `jwt` sent as the whole body has none. */
    header: headerName.optional(),
    algorithm: z
      .enum([...HMAC_ALGORITHMS, ...PUBLIC_KEY_ALGORITHMS, ...DIGEST_ALGORITHMS])
      .default('hmac-sha256'),
    /** How the signature in the header is written. */
    encoding: z.enum(['hex', 'base64']).default('hex'),
    /** Stripped from the header value (`sha256=`, `v0=`, Standard Webhooks' `v1,`). */
    prefix: z.string().min(1).optional(),
    /**
     * `key-value`: the header holds `k=v` pairs separated by `,` (Stripe: `t=…,v1=…,v1=…`).
     * `jwt`: the webhook is a JSON Web Token (the whole body, or the header's value after `prefix`), signed
     * per `algorithm` (`hmac-sha256` = HS256, `rsa-sha256` = RS256, `ed25519` = EdDSA); its claims are the
     * webhook that is routed and forwarded (Dialpad).
     */
    scheme: z.enum(['plain', 'key-value', 'jwt']).default('plain'),
    /** plain only: the header holds several signatures separated by this (Standard Webhooks: a space). */
    separator: z.string().min(1).optional(),
    /** key-value only: the key whose values are signatures (any one may match, for secret rotation). */
    signature_key: z.string().min(1).optional(),
    /** What is signed. */
    payload: signedPayloadTemplate.default('{body}'),
    /**
     * Which secret of the integration keys the HMAC (or is `{secret}` in a digest). For a public-key algorithm, the integration's
     * `webhook_public_key` (or, for a short key, `webhook_secret`) holds the provider's public key (PEM or base64 DER),
     * else `public_key` is used.
     */
    secret: z.enum(['webhook_secret', 'client_secret']).default('webhook_secret'),
    /** Stripped from the secret before decoding (Standard Webhooks secrets start `whsec_`). */
    secret_prefix: z.string().min(1).optional(),
    /**
     * HMAC only: the secret is the hex or base64 of the key bytes and is decoded before use (Squarespace and
     * Dixa give hex keys, Standard Webhooks base64). Without it the key is the secret's UTF-8 bytes.
     */
    secret_encoding: z.enum(['hex', 'base64']).optional(),
    /** Public-key algorithms only: the provider's published key, used when the integration stores none. */
    public_key: z.string().min(1).optional(),
    timestamp: WebhookTimestampSchema.optional(),
  })
  .superRefine((sig, ctx) => {
    const issue = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
    const publicKeyAlgorithm = (PUBLIC_KEY_ALGORITHMS as readonly string[]).includes(sig.algorithm);
    const digestAlgorithm = (DIGEST_ALGORITHMS as readonly string[]).includes(sig.algorithm);
    const mixesSecret = sig.payload.includes('{secret}');
    // A digest without the secret in it is a checksum anyone can compute; the secret in anything else
    // would only be one more place it could leak from.
    if (digestAlgorithm && !mixesSecret) issue('payload', `must include {secret} for ${sig.algorithm}`);
    if (!digestAlgorithm && mixesSecret)
      issue('payload', 'may include {secret} only with a digest algorithm (sha256, sha1, sha512)');
    if (digestAlgorithm && sig.scheme === 'jwt') issue('algorithm', 'a jwt cannot be checked as a digest');
    if (digestAlgorithm && sig.secret_encoding)
      issue('secret_encoding', 'applies to HMAC keys only; a digest mixes the secret in as text');
    if (!sig.header && !(sig.scheme === 'jwt')) issue('header', 'is required (only a jwt body has none)');
    if (sig.scheme === 'key-value' && !sig.signature_key)
      issue('signature_key', 'is required when scheme is key-value');
    if (sig.scheme !== 'key-value' && sig.signature_key) issue('signature_key', 'needs scheme key-value');
    if (sig.separator && sig.scheme !== 'plain') issue('separator', 'needs scheme plain');
    if (sig.timestamp?.from === 'signature' && sig.scheme !== 'key-value') {
      ctx.addIssue({
        code: 'custom',
        path: ['timestamp', 'from'],
        message: '"signature" needs scheme key-value',
      });
    }
    if (sig.payload.includes('{timestamp}') && !sig.timestamp) {
      issue('payload', 'uses {timestamp} but no timestamp is declared');
    }
    if (sig.scheme === 'jwt') {
      // The token carries its own algorithm, claims and expiry: nothing else about it can be declared.
      if (sig.payload !== '{body}') issue('payload', 'cannot be set for a jwt: the token is what is signed');
      if (sig.timestamp) issue('timestamp', 'cannot be set for a jwt: its exp and nbf claims are checked');
      if (sig.algorithm === 'hmac-sha1' || sig.algorithm === 'hmac-sha512')
        issue('algorithm', 'a jwt is checked as hmac-sha256 (HS256), rsa-sha256 (RS256) or ed25519 (EdDSA)');
    }
    if (publicKeyAlgorithm) {
      if (sig.secret !== 'webhook_secret')
        issue(
          'secret',
          'must be webhook_secret for a public-key algorithm (the client secret is no public key)',
        );
      if (sig.secret_encoding || sig.secret_prefix)
        issue('secret_encoding', 'applies to HMAC keys only; a public key is PEM or base64 DER');
      if (sig.public_key) {
        const key = readPublicKey(sig.public_key);
        if (!key)
          issue('public_key', 'is not a readable public key (PEM or base64 DER SubjectPublicKeyInfo)');
        else if (!publicKeyFits(sig.algorithm as (typeof PUBLIC_KEY_ALGORITHMS)[number], key))
          issue('public_key', `is not a key for ${sig.algorithm}`);
      }
    } else if (sig.public_key) {
      issue('public_key', 'applies to rsa-sha256 and ed25519 only');
    }
  });
export type WebhookSignature = z.infer<typeof WebhookSignatureSchema>;

export const WebhookConditionSchema = z.strictObject({
  value: WebhookValueSourceSchema,
  /** Without it the condition only asks that the value be present. */
  equals: z.string().optional(),
  /** The body must have no other top-level key (Notion's verification request is only the token). */
  sole_key: z.boolean().optional(),
});

export const WebhookHandshakeSchema = z.strictObject({
  when: WebhookConditionSchema,
  /** Whether the handshake request is signed like any other (Slack's is; Notion's is not). */
  verify_signature: z.boolean().default(true),
  respond: z.strictObject({
    status: z.number().int().min(200).max(299).default(200),
    content_type: z.enum(['text/plain', 'application/json']).default('text/plain'),
    /** Echo this value (Slack's `challenge`); without it the body is empty. */
    echo: WebhookValueSourceSchema.optional(),
    /** application/json only: wrap the echoed value as `{ <json_key>: value }`. */
    json_key: z.string().min(1).optional(),
  }),
  /** Forward the handshake to the customer (unrouted), e.g. so they can read a verification token. */
  forward: z.boolean().default(false),
});
export type WebhookHandshake = z.infer<typeof WebhookHandshakeSchema>;

const matchField = z
  .string()
  .regex(
    /^(connection_id|connection_config\.[\w.-]+|metadata\.[\w.-]+)$/,
    'must be connection_id, connection_config.<key> or metadata.<key>',
  );

export const WebhookRoutingRuleSchema = z.strictObject({
  value: WebhookValueSourceSchema,
  /** The connection field the value must equal. */
  match: matchField,
  /** Applied to the value before matching (Shopify sends `acme.myshopify.com`, the connection stores `acme`). */
  strip_prefix: z.string().min(1).optional(),
  strip_suffix: z.string().min(1).optional(),
});
export type WebhookRoutingRule = z.infer<typeof WebhookRoutingRuleSchema>;

export const WebhookSchema = z.strictObject({
  signature: WebhookSignatureSchema.optional(),
  handshakes: z.array(WebhookHandshakeSchema).optional(),
  /** The provider's id of this delivery: a provider retry with the same id is stored once. */
  delivery_id: WebhookValueSourceSchema.optional(),
  /** Every rule is applied; the webhook goes to every connection any value matches. */
  routing: z.array(WebhookRoutingRuleSchema).optional(),
  /**
   * Where the webhook's type is (GitHub's `x-github-event` header, Linear's body `type`): the names a sync's
   * `webhookSubscriptions` list. A sync subscribed to one of the values found (or to `*`) gets the webhook.
   * A list when the provider sends more than one body shape: the values of every place count.
   */
  subscription_type: z.union([WebhookValueSourceSchema, z.array(WebhookValueSourceSchema).min(1)]).optional(),
});
export type WebhookDefinition = z.infer<typeof WebhookSchema>;
