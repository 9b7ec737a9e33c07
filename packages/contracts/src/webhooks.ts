import { z } from 'zod';
import type { Caller } from './context';
import { natsRequest } from './nats-request';

/**
 * Webhooks: the environment's webhook settings and signing key, provider webhooks coming in, and the
 * deliveries going out to the customer (with their log). Owned by webhook-relay.
 */

export const WEBHOOK_SUBJECTS = {
  /** gateway → relay: a provider POSTed to `/webhook/:environmentUuid/:providerConfigKey`. */
  ingest: 'relay.v1.provider-webhook.ingest',
  /** gateway → relay: a provider webhook the gateway's embedded ingress refused (bad signature), to be logged. */
  recordRefusal: 'relay.v1.provider-webhook.refused',
  getSettings: 'relay.v1.webhook-settings.get',
  updateSettings: 'relay.v1.webhook-settings.update',
  rotateSigningKey: 'relay.v1.webhook-signing-key.rotate',
  listDeliveries: 'relay.v1.deliveries.list',
  getDelivery: 'relay.v1.delivery.get',
  redeliver: 'relay.v1.delivery.redeliver',
} as const;

/** auth-connect answers this for the relay: an environment by id or by its public UUID. */
export const ENVIRONMENT_SUBJECTS = {
  resolve: 'auth.v1.environment.resolve',
} as const;
export const resolveEnvironmentRequestSchema = z.union([
  z.object({ id: z.number().int() }).strict(),
  z.object({ uuid: z.string().uuid() }).strict(),
]);
export type ResolveEnvironmentRequest = z.infer<typeof resolveEnvironmentRequestSchema>;
export const resolvedEnvironmentSchema = z.object({
  id: z.number().int(),
  uuid: z.string(),
  name: z.string(),
  accountId: z.number().int(),
});
export type ResolvedEnvironment = z.infer<typeof resolvedEnvironmentSchema>;

// ---- settings -------------------------------------------------------------------------------------

export const WEBHOOK_EVENT_TYPES = ['auth', 'forward', 'sync', 'async_action'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/**
 * On every forwarded provider webhook (wrapped or raw): `true` when its signature was checked, `false`
 * when there was nothing to check it with. An inbound header of this name is never passed on.
 */
export const WEBHOOK_VERIFIED_HEADER = 'x-switchboard-webhook-verified';

/** A customer endpoint: absolute http(s) URL without credentials. The egress policy is checked by the relay. */
export const webhookUrlSchema = z
  .string()
  .max(2048)
  .refine((value) => {
    try {
      const url = new URL(value);
      return (url.protocol === 'https:' || url.protocol === 'http:') && !url.username && !url.password;
    } catch {
      return false;
    }
  }, 'must be an absolute http:// or https:// URL without credentials');

export const webhookSettingsSchema = z
  .object({
    primary_url: z.string().nullable(),
    secondary_url: z.string().nullable(),
    on_auth_creation: z.boolean(),
    on_auth_refresh_error: z.boolean(),
    on_sync_error: z.boolean(),
    on_sync_completion_always: z.boolean(),
    on_async_action_completion: z.boolean(),
  })
  .meta({ id: 'WebhookSettings' });
export type WebhookSettings = z.infer<typeof webhookSettingsSchema>;

/** `null` or `""` clears a URL; a field left out keeps its value. */
const nullableUrl = z
  .union([webhookUrlSchema, z.literal(''), z.null()])
  .transform((value) => (value === '' ? null : value));

export const patchWebhookSettingsSchema = z
  .object({
    primary_url: nullableUrl.optional(),
    secondary_url: nullableUrl.optional(),
    on_auth_creation: z.boolean().optional(),
    on_auth_refresh_error: z.boolean().optional(),
    on_sync_error: z.boolean().optional(),
    on_sync_completion_always: z.boolean().optional(),
    on_async_action_completion: z.boolean().optional(),
  })
  .strict();
export type PatchWebhookSettings = z.infer<typeof patchWebhookSettingsSchema>;

export const patchEnvironmentBodySchema = z
  .object({ webhook_settings: patchWebhookSettingsSchema })
  .strict()
  .meta({ id: 'PatchEnvironmentBody' });
export type PatchEnvironmentBody = z.infer<typeof patchEnvironmentBodySchema>;

export const disabledWebhookUrlSchema = z.object({
  url: z.string(),
  disabled_at: z.string(),
  reason: z.string(),
});

/** What the relay answers about an environment's webhooks. */
export const environmentWebhookStateSchema = z.object({
  webhook_settings: webhookSettingsSchema,
  /** Signs every delivery (`X-Nango-Hmac-Sha256`, `X-Nango-Signature`, `webhook-signature`). */
  webhook_signing_key: z.string(),
  /** After a rotation the previous key keeps signing (in `webhook-signature`) until then. */
  previous_webhook_signing_key_expires_at: z.string().nullable(),
  /** Endpoints that answered 410 Gone; setting the URL again (or redelivering) re-enables them. */
  disabled_webhook_urls: z.array(disabledWebhookUrlSchema),
});
export type EnvironmentWebhookState = z.infer<typeof environmentWebhookStateSchema>;

/** `GET /environment` / `PATCH /environment`: the caller's environment with its webhook settings. */
export const apiEnvironmentSchema = z
  .object({
    id: z.number().int(),
    uuid: z.string(),
    name: z.string(),
    ...environmentWebhookStateSchema.shape,
  })
  .meta({ id: 'Environment' });
export type ApiEnvironment = z.infer<typeof apiEnvironmentSchema>;

export const rotatedSigningKeySchema = z
  .object({
    webhook_signing_key: z.string(),
    previous_webhook_signing_key_expires_at: z.string().nullable(),
  })
  .meta({ id: 'RotatedWebhookSigningKey' });
export type RotatedSigningKey = z.infer<typeof rotatedSigningKeySchema>;

// ---- delivery log -------------------------------------------------------------------------------

/**
 * `refused`: a provider webhook whose signature did not verify with the integration's webhook secret; it
 * was answered 401, sent nowhere and cannot be redelivered. The row is how refusals are counted.
 * `dead_lettered`: an event the relay will never deliver (a provider webhook nesting too deep, or an event
 * whose processing failed permanently or on every try); sent nowhere, never retried, `last_error` says why.
 */
export const DELIVERY_STATUSES = [
  'pending',
  'delivered',
  'failed',
  'endpoint_disabled',
  'refused',
  'dead_lettered',
] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export const webhookDeliverySchema = z
  .object({
    id: z.number().int(),
    /** The `webhook-id` header: stable across retries and redeliveries, the receiver's idempotency key. */
    webhook_id: z.string(),
    type: z.enum(WEBHOOK_EVENT_TYPES),
    url: z.string(),
    connection_id: z.string().nullable(),
    provider_config_key: z.string().nullable(),
    status: z.enum(DELIVERY_STATUSES),
    attempts: z.number().int(),
    last_status_code: z.number().int().nullable(),
    last_error: z.string().nullable(),
    next_attempt_at: z.string().nullable(),
    delivered_at: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'WebhookDelivery' });
export type WebhookDelivery = z.infer<typeof webhookDeliverySchema>;

export const webhookAttemptSchema = z.object({
  attempt: z.number().int(),
  started_at: z.string(),
  duration_ms: z.number().int(),
  status_code: z.number().int().nullable(),
  error: z.string().nullable(),
});

export const webhookDeliveryDetailSchema = webhookDeliverySchema
  .extend({
    /** The exact bytes sent (compact JSON, keys sorted). */
    body: z.string(),
    attempt_log: z.array(webhookAttemptSchema),
  })
  .meta({ id: 'WebhookDeliveryDetail' });
export type WebhookDeliveryDetail = z.infer<typeof webhookDeliveryDetailSchema>;

export const listDeliveriesQuerySchema = z
  .object({
    limit: z.coerce.number().int().min(1).max(100).default(50),
    /** The `next_cursor` of the previous page. */
    cursor: z.coerce.number().int().positive().optional(),
    status: z.enum(DELIVERY_STATUSES).optional(),
    type: z.enum(WEBHOOK_EVENT_TYPES).optional(),
    connection_id: z.string().max(255).optional(),
  })
  .strict();
export type ListDeliveriesQuery = z.infer<typeof listDeliveriesQuerySchema>;

export const deliveryPageSchema = z
  .object({ data: z.array(webhookDeliverySchema), next_cursor: z.number().int().nullable() })
  .meta({ id: 'WebhookDeliveryPage' });
export type DeliveryPage = z.infer<typeof deliveryPageSchema>;

export const deliveryIdParamsSchema = z.object({ id: z.coerce.number().int().positive() });

// ---- NATS requests --------------------------------------------------------------------------------

const envRef = { environmentId: z.number().int() };
export const getWebhookSettingsRequestSchema = z.object(envRef);
export const updateWebhookSettingsRequestSchema = z.object({ ...envRef, patch: patchWebhookSettingsSchema });
export const rotateSigningKeyRequestSchema = z.object(envRef);
export const listDeliveriesRequestSchema = z.object({ ...envRef, query: listDeliveriesQuerySchema });
export const deliveryRequestSchema = z.object({ ...envRef, id: z.number().int().positive() });

/** One provider webhook as the gateway received it; the body travels as text when it is valid UTF-8. */
export const ingestRequestSchema = z.object({
  environmentUuid: z.string().uuid(),
  providerConfigKey: z.string().min(1).max(255),
  /** Path and query as the provider called them (some providers sign the URL). */
  url: z.string(),
  headers: z.record(z.string(), z.string()),
  body: z.string(),
  bodyEncoding: z.enum(['utf8', 'base64']),
});
export type IngestRequest = z.infer<typeof ingestRequestSchema>;

/** What the gateway answers the provider. */
export const ingestReplySchema = z.object({
  status: z.number().int(),
  contentType: z.string().nullable(),
  body: z.string().nullable(),
});
export type IngestReply = z.infer<typeof ingestReplySchema>;

/**
 * A refused provider webhook for the delivery log: only what we know, never the sender's body or headers.
 * `dead_lettered` (absent means `refused`): it verified but can never be delivered (its body nests too
 * deep); it was answered 200 and is logged, never stored for delivery.
 */
export const webhookRefusalSchema = z.object({
  kind: z.enum(['refused', 'dead_lettered']).optional(),
  environmentId: z.number().int(),
  provider: z.string().max(255),
  providerConfigKey: z.string().min(1).max(255),
  reason: z.string().max(500),
  receivedAt: z.iso.datetime(),
});
export type WebhookRefusal = z.infer<typeof webhookRefusalSchema>;

// ---- JetStream events the relay consumes --------------------------------------------------------

/**
 * `events.v1.provider-webhook`: a provider webhook, stored before the provider got its 2xx: verified, or
 * unverifiable (no recipe or no secret; `verified: false`). One that fails verification is never stored.
 */
export const providerWebhookEventSchema = z.object({
  id: z.string().min(1).max(200),
  environmentId: z.number().int(),
  providerConfigKey: z.string(),
  provider: z.string(),
  receivedAt: z.string(),
  /** The integration's `forward_webhooks` when the webhook arrived. */
  forward: z.boolean(),
  /** Whether a signature was checked (false when the integration has no secret to check it with). */
  verified: z.boolean(),
  contentType: z.string().nullable(),
  /** The provider's headers minus hop-by-hop and sensitive ones, forwarded with `forward` deliveries. */
  headers: z.record(z.string(), z.string()),
  body: z.string(),
  bodyEncoding: z.enum(['utf8', 'base64']),
  /** The catalog's routing rules at receipt (`webhook.routing`), so a catalog change never re-routes a stored event. */
  routing: z.array(z.record(z.string(), z.unknown())),
  /**
   * The webhook's subscription types, found where the catalog's `webhook.subscription_type` says (GitHub's
   * `x-github-event` header, Linear's body `type`, ...): what syncs' `webhookSubscriptions` name.
   */
  subscriptionTypes: z.array(z.string()).default([]),
});
export type ProviderWebhookEvent = z.infer<typeof providerWebhookEventSchema>;

/**
 * `events.v1.sync-webhook` (published by webhook-relay once it routed a provider webhook to connections):
 * sync-orchestrator runs the `onWebhook` handler of every sync of the integration whose
 * `webhookSubscriptions` name one of `subscriptionTypes` (or `*`), once per matched connection.
 */
export const syncWebhookEventSchema = z.object({
  /** Derived from the provider webhook's id: a redelivery is the same event. */
  id: z.string().min(1).max(200),
  environmentId: z.number().int(),
  provider: z.string(),
  providerConfigKey: z.string(),
  connectionIds: z.array(z.string()).min(1),
  subscriptionTypes: z.array(z.string()),
  /** The provider's body, parsed (JSON, or form fields), as the handler receives it. */
  payload: z.unknown(),
  receivedAt: z.string(),
});
export type SyncWebhookEvent = z.infer<typeof syncWebhookEventSchema>;

/**
 * webhook-relay → sync-orchestrator: the `webhookSubscriptions` of the integration's enabled syncs, so the
 * relay publishes `events.v1.sync-webhook` only for a webhook some sync subscribes to (most integrations
 * have none). Internal: not under `orchestrator.v1.sync.>`, which function code may call.
 */
export const SYNC_WEBHOOK_SUBJECTS = {
  subscriptions: 'orchestrator.v1.sync-webhooks.subscriptions',
} as const;
export const syncWebhookSubscriptionsRequestSchema = z.object({
  environmentId: z.number().int(),
  providerConfigKey: z.string(),
});
export type SyncWebhookSubscriptionsRequest = z.infer<typeof syncWebhookSubscriptionsRequestSchema>;
export const syncWebhookSubscriptionsReplySchema = z.object({
  /** Every subscription of every enabled sync of the integration (`*` takes every webhook). */
  subscriptions: z.array(z.string()),
});
export type SyncWebhookSubscriptionsReply = z.infer<typeof syncWebhookSubscriptionsReplySchema>;

/** Whether subscriptions take a webhook of one of these types (`*` takes every webhook). */
export function subscribes(subscriptions: readonly string[], types: readonly string[]): boolean {
  return subscriptions.some((s) => s === '*' || types.includes(s));
}

const errorPayloadSchema = z.object({ type: z.string(), description: z.string() }).loose();

/** `events.v1.sync` (published by sync-orchestrator): one per model on success, one per sync on failure. */
export const syncEventSchema = z.object({
  id: z.string().min(1).max(200),
  environmentId: z.number().int(),
  connectionId: z.string(),
  providerConfigKey: z.string(),
  syncName: z.string(),
  syncVariant: z.string(),
  model: z.string(),
  syncType: z.enum(['INITIAL', 'INCREMENTAL', 'WEBHOOK']),
  checkpoints: z.object({ from: z.unknown().nullable(), to: z.unknown().nullable() }).optional(),
  result: z.discriminatedUnion('success', [
    z.object({
      success: z.literal(true),
      modifiedAfter: z.string(),
      responseResults: z.object({
        added: z.number().int(),
        updated: z.number().int(),
        deleted: z.number().int(),
      }),
    }),
    z.object({
      success: z.literal(false),
      error: errorPayloadSchema,
      startedAt: z.string(),
      failedAt: z.string(),
    }),
  ]),
});
export type SyncEvent = z.infer<typeof syncEventSchema>;

/** `events.v1.async-action` (published by sync-orchestrator) when an async action terminates. */
export const asyncActionEventSchema = z.object({
  id: z.string().min(1).max(200),
  environmentId: z.number().int(),
  connectionId: z.string(),
  providerConfigKey: z.string(),
  actionId: z.string(),
});
export type AsyncActionEvent = z.infer<typeof asyncActionEventSchema>;

// ---- payloads sent to the customer (Nango's shapes) ----------------------------------------------

export const authWebhookBodySchema = z.object({
  from: z.literal('nango'),
  type: z.literal('auth'),
  connectionId: z.string(),
  providerConfigKey: z.string(),
  authMode: z.string(),
  provider: z.string(),
  environment: z.string(),
  operation: z.enum(['creation', 'override', 'refresh']),
  success: z.boolean(),
  tags: z.record(z.string(), z.string()).optional(),
  endUser: z
    .object({
      endUserId: z.string(),
      endUserEmail: z.string().nullable().optional(),
      organizationId: z.string().optional(),
      tags: z.record(z.string(), z.string()),
    })
    .optional(),
  error: errorPayloadSchema.optional(),
});
export type AuthWebhookBody = z.infer<typeof authWebhookBodySchema>;

export const forwardWebhookBodySchema = z.object({
  from: z.string(),
  type: z.literal('forward'),
  providerConfigKey: z.string(),
  connectionId: z.string(),
  payload: z.unknown(),
  /**
   * Whether we checked the provider's signature. false when the catalog has no signature recipe for the
   * provider or the integration has no webhook secret: anyone who knows the URL could have sent it.
   */
  verified: z.boolean(),
});
export type ForwardWebhookBody = z.infer<typeof forwardWebhookBodySchema>;

export const asyncActionWebhookBodySchema = z.object({
  from: z.literal('nango'),
  type: z.literal('async_action'),
  connectionId: z.string(),
  providerConfigKey: z.string(),
  payload: z.object({ id: z.string(), statusUrl: z.string() }),
});

/** Webhook settings, deliveries and provider webhook ingestion (webhook-relay answers). */
export const WEBHOOK_REQUESTS = {
  ingest: natsRequest({
    subject: WEBHOOK_SUBJECTS.ingest,
    request: ingestRequestSchema,
    reply: ingestReplySchema,
  }),
  recordRefusal: natsRequest({
    subject: WEBHOOK_SUBJECTS.recordRefusal,
    request: webhookRefusalSchema,
    reply: z.object({ recorded: z.literal(true) }),
  }),
  getSettings: natsRequest({
    subject: WEBHOOK_SUBJECTS.getSettings,
    request: getWebhookSettingsRequestSchema,
    reply: environmentWebhookStateSchema,
  }),
  updateSettings: natsRequest({
    subject: WEBHOOK_SUBJECTS.updateSettings,
    request: updateWebhookSettingsRequestSchema,
    reply: environmentWebhookStateSchema,
  }),
  rotateSigningKey: natsRequest({
    subject: WEBHOOK_SUBJECTS.rotateSigningKey,
    request: rotateSigningKeyRequestSchema,
    reply: rotatedSigningKeySchema,
  }),
  listDeliveries: natsRequest({
    subject: WEBHOOK_SUBJECTS.listDeliveries,
    request: listDeliveriesRequestSchema,
    reply: deliveryPageSchema,
  }),
  getDelivery: natsRequest({
    subject: WEBHOOK_SUBJECTS.getDelivery,
    request: deliveryRequestSchema,
    reply: webhookDeliveryDetailSchema,
  }),
  redeliver: natsRequest({
    subject: WEBHOOK_SUBJECTS.redeliver,
    request: deliveryRequestSchema,
    reply: webhookDeliverySchema,
  }),
};

/** Environments by id or secret key (auth-connect answers). */
export const ENVIRONMENT_REQUESTS = {
  resolve: natsRequest({
    subject: ENVIRONMENT_SUBJECTS.resolve,
    request: resolveEnvironmentRequestSchema,
    reply: resolvedEnvironmentSchema,
  }),
};

/** What sends the environment request: the messaging package's `NatsRequester`, or a test's. */
export interface EnvironmentResolver {
  call(
    def: (typeof ENVIRONMENT_REQUESTS)['resolve'],
    data: ResolveEnvironmentRequest,
  ): Promise<ResolvedEnvironment>;
}

/**
 * The caller acting in an environment (by id or public UUID) without an API key of its own: a background
 * run (a scheduled sync, an on-event script), as the gateway would send it. auth-connect answers; an
 * unknown environment rejects with its error.
 */
export async function environmentCaller(
  nats: EnvironmentResolver,
  environment: ResolveEnvironmentRequest,
): Promise<Caller> {
  const resolved = await nats.call(ENVIRONMENT_REQUESTS.resolve, environment);
  return {
    accountId: resolved.accountId,
    environmentId: resolved.id,
    environmentUuid: resolved.uuid,
    environmentName: resolved.name,
  };
}

/** Which webhook types an integration's syncs take (sync-orchestrator answers). */
export const SYNC_WEBHOOK_REQUESTS = {
  subscriptions: natsRequest({
    subject: SYNC_WEBHOOK_SUBJECTS.subscriptions,
    request: syncWebhookSubscriptionsRequestSchema,
    reply: syncWebhookSubscriptionsReplySchema,
  }),
};
