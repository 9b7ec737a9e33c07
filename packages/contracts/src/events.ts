import { z } from 'zod';

/**
 * Events that must not be lost travel on one JetStream stream. Publishers set a stable `id`, sent as
 * `Nats-Msg-Id` so a retried publish is stored once; consumers ack explicitly.
 */
export const EVENT_STREAM = {
  name: 'SWITCHBOARD_EVENTS',
  subjects: ['events.>'],
} as const;

export const EVENT_SUBJECTS = {
  /** A connection was authorized (creation, override) or its refresh failed. Published by auth-connect / vault. */
  auth: 'events.v1.auth',
  /** A provider webhook was received and stored; the relay routes and forwards it. */
  providerWebhook: 'events.v1.provider-webhook',
  /** The relay routed a provider webhook to connections; sync-orchestrator runs the matching syncs' onWebhook. */
  syncWebhook: 'events.v1.sync-webhook',
  /** A sync run finished (later issue). */
  sync: 'events.v1.sync',
  /** An async action finished (later issue). */
  asyncAction: 'events.v1.async-action',
  /**
   * An integration was deleted (auth-connect): the orchestrator deletes its functions. Durable, so an
   * orchestrator that was down catches up instead of leaving them behind.
   */
  integration: 'events.v1.integration',
  /**
   * A connection was deleted (vault, through its outbox in the delete's transaction): the orchestrator
   * removes its syncs' schedules, checkpoints and records. Durable, so an orchestrator that was down when
   * the connection went (its pre-connection-deletion call failed) catches up.
   */
  connection: 'events.v1.connection',
} as const;

export const integrationEventSchema = z.object({
  id: z.string().min(1).max(200),
  environmentId: z.number().int(),
  providerConfigKey: z.string(),
  operation: z.literal('deletion'),
  /** Functions deployed after this moment belong to a new integration of the same key and are kept. */
  occurredAt: z.string().datetime({ offset: true }),
});
export type IntegrationEvent = z.infer<typeof integrationEventSchema>;

export const connectionEventSchema = z.object({
  id: z.string().min(1).max(200),
  environmentId: z.number().int(),
  providerConfigKey: z.string(),
  connectionId: z.string(),
  operation: z.literal('deletion'),
  /** Syncs created after this moment belong to a new connection of the same id and are kept. */
  occurredAt: z.string().datetime({ offset: true }),
});
export type ConnectionEvent = z.infer<typeof connectionEventSchema>;

export const endUserSchema = z.object({
  id: z.string(),
  display_name: z.string().nullable(),
  email: z.string().nullable(),
  tags: z.record(z.string(), z.string()).nullable(),
  organization: z.object({ id: z.string(), display_name: z.string().nullable() }).nullable(),
});
export type EndUser = z.infer<typeof endUserSchema>;

export const authEventSchema = z.object({
  /** Stable id: the delivery id customers see, and the JetStream de-duplication key. */
  id: z.string().min(1).max(200),
  environmentId: z.number().int(),
  connectionId: z.string(),
  providerConfigKey: z.string(),
  provider: z.string(),
  operation: z.enum(['creation', 'override', 'refresh']),
  success: z.boolean(),
  tags: z.record(z.string(), z.string()).default({}),
  endUser: endUserSchema.nullable().default(null),
  /** When the connection's webhooks must go only to this URL. */
  webhookUrlOverride: z.string().nullable().default(null),
  error: z.object({ type: z.string(), description: z.string() }).nullable().default(null),
  occurredAt: z.string(),
});
export type AuthEvent = z.infer<typeof authEventSchema>;
