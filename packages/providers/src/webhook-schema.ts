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
 * `{body}` (raw bytes), `{timestamp}` (the value found by `timestamp`), `{method}`, `{url}` (the public URL
 * the provider called, with its query) and `{header:<name>}`; anything else is literal text.
 */
const signedPayloadTemplate = z.string().superRefine((value, ctx) => {
  for (const match of value.matchAll(/\{([^{}]*)\}/g)) {
    const token = match[1] ?? '';
    if (!/^(body|timestamp|method|url|header:[a-z0-9!#$%&'*+.^_`|~-]+)$/.test(token)) {
      ctx.addIssue({
        code: 'custom',
        message: `unknown placeholder {${token}}; use {body}, {timestamp}, {method}, {url} or {header:<name>}`,
      });
    }
  }
  if (!value.includes('{body}')) ctx.addIssue({ code: 'custom', message: 'must include {body}' });
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

export const WebhookSignatureSchema = z
  .strictObject({
    header: headerName,
    algorithm: z.enum(['hmac-sha256', 'hmac-sha1']).default('hmac-sha256'),
    encoding: z.enum(['hex', 'base64']).default('hex'),
    /** Stripped from the header value (`sha256=`, `v0=`). */
    prefix: z.string().min(1).optional(),
    /** `key-value`: the header holds `k=v` pairs separated by `,` (Stripe: `t=…,v1=…,v1=…`). */
    scheme: z.enum(['plain', 'key-value']).default('plain'),
    /** key-value only: the key whose values are signatures (any one may match, for secret rotation). */
    signature_key: z.string().min(1).optional(),
    /** What is signed. */
    payload: signedPayloadTemplate.default('{body}'),
    /** Which secret of the integration keys the HMAC. */
    secret: z.enum(['webhook_secret', 'client_secret']).default('webhook_secret'),
    timestamp: WebhookTimestampSchema.optional(),
  })
  .superRefine((sig, ctx) => {
    if (sig.scheme === 'key-value' && !sig.signature_key) {
      ctx.addIssue({
        code: 'custom',
        path: ['signature_key'],
        message: 'is required when scheme is key-value',
      });
    }
    if (sig.timestamp?.from === 'signature' && sig.scheme !== 'key-value') {
      ctx.addIssue({
        code: 'custom',
        path: ['timestamp', 'from'],
        message: '"signature" needs scheme key-value',
      });
    }
    if (sig.payload.includes('{timestamp}') && !sig.timestamp) {
      ctx.addIssue({
        code: 'custom',
        path: ['payload'],
        message: 'uses {timestamp} but no timestamp is declared',
      });
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
