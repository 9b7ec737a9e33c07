import { z } from 'zod';
import { natsRequest, successReplySchema } from './nats-request';
import { connectionIdSchema } from './connections-api';
import { callerSchema } from './context';
import { functionNameSchema } from './functions';

/**
 * Sync control (Nango's `/sync/*` routes): the gateway validates the public bodies below and asks
 * sync-orchestrator, which owns syncs, their Temporal schedules and their runs.
 */
export const SYNC_SUBJECTS = {
  trigger: 'orchestrator.v1.sync.trigger',
  pause: 'orchestrator.v1.sync.pause',
  start: 'orchestrator.v1.sync.start',
  status: 'orchestrator.v1.sync.status',
  frequency: 'orchestrator.v1.sync.frequency',
  variantCreate: 'orchestrator.v1.sync.variant.create',
  variantDelete: 'orchestrator.v1.sync.variant.delete',
} as const;

/** The default variant; reserved (a variant of that name cannot be created or deleted). */
export const BASE_VARIANT = 'base';
/** Nango's `MAX_SYNCS_PER_CONNECTION`: variants of one sync on one connection, `base` included. */
export const MAX_SYNC_VARIANTS = 100;
/** Nango's floor for `runs` and frequency overrides. */
export const MIN_SYNC_INTERVAL_MS = 30_000;

export const syncVariantSchema = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[a-zA-Z0-9_-]+$/, 'may hold only letters, digits, "_" and "-"');

/**
 * Nango's frequency syntax (`every 2 hours`, `30m`, `every half hour`, ...). Checked here for its shape;
 * the orchestrator turns it into an interval (the `ms` library) and enforces the 30 s floor.
 */
export const syncFrequencySchema = z
  .string()
  .max(100)
  .regex(
    /^(?:(?:every )?(?:\d+)?\s?(?:s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?|w|weeks?)|(?:every )?(?:month|week|day|hour|half day|half hour|quarter hour))$/i,
    'is not a frequency ("every 2 hours", "30m", "every half hour", ...)',
  );

/** One sync of a command: `name`, `name::variant` or `{ name, variant }`. */
export const syncIdentifierSchema = z.union([
  z.string().min(1).max(600),
  z.object({ name: z.string().min(1).max(255), variant: z.string().min(1).max(255) }),
]);
export type SyncIdentifierInput = z.infer<typeof syncIdentifierSchema>;

export interface SyncIdentifier {
  name: string;
  variant: string;
}

/** `name::variant` → `{name, variant}`; a plain name is the `base` variant. */
export function toSyncIdentifier(input: SyncIdentifierInput): SyncIdentifier {
  if (typeof input !== 'string') return { name: input.name, variant: input.variant };
  const at = input.indexOf('::');
  if (at < 0) return { name: input, variant: BASE_VARIANT };
  return { name: input.slice(0, at), variant: input.slice(at + 2) || BASE_VARIANT };
}

// ---- public bodies (Nango's) -------------------------------------------------------------------

export const SYNC_MODES = ['incremental', 'full_refresh', 'full_refresh_and_clear_cache'] as const;
export type SyncMode = (typeof SYNC_MODES)[number];

/**
 * What a trigger's `sync_mode` asks for (the node client's legacy boolean `full_resync` too: true is
 * `full_refresh`): a full resync unless incremental, and the records cleared first for
 * `full_refresh_and_clear_cache`.
 */
export function syncModeFlags(mode: SyncMode | boolean | undefined): { reset: boolean; emptyCache: boolean } {
  const m = typeof mode === 'boolean' ? (mode ? 'full_refresh' : 'incremental') : (mode ?? 'incremental');
  return { reset: m !== 'incremental', emptyCache: m === 'full_refresh_and_clear_cache' };
}

export const syncTriggerBodySchema = z
  .object({
    syncs: z.array(syncIdentifierSchema).max(256).default([]),
    provider_config_key: z.string().min(1).max(255).optional(),
    connection_id: connectionIdSchema.optional(),
    opts: z.object({ reset: z.boolean().optional(), emptyCache: z.boolean().optional() }).strict().optional(),
    sync_mode: z.enum(SYNC_MODES).optional(),
    /** Deprecated alias of `sync_mode: full_refresh`. */
    full_resync: z.boolean().optional(),
  })
  .strict()
  .refine((b) => !(b.opts && (b.sync_mode !== undefined || b.full_resync !== undefined)), {
    message: 'opts cannot be combined with sync_mode or full_resync',
    path: ['opts'],
  });
export type SyncTriggerBody = z.infer<typeof syncTriggerBodySchema>;

export const syncTriggerHeadersSchema = z.object({
  'provider-config-key': z.string().min(1).max(255).optional(),
  'connection-id': connectionIdSchema.optional(),
});

export const syncPauseStartBodySchema = z
  .object({
    syncs: z.array(syncIdentifierSchema).max(256),
    provider_config_key: z.string().min(1).max(255),
    connection_id: connectionIdSchema.optional(),
  })
  .strict();
export type SyncPauseStartBody = z.infer<typeof syncPauseStartBodySchema>;

export const syncStatusQuerySchema = z
  .object({
    syncs: z.string().min(1).max(10_000),
    provider_config_key: z.string().min(1).max(255),
    connection_id: connectionIdSchema.optional(),
  })
  .strict();

export const syncFrequencyBodySchema = z
  .object({
    sync_name: functionNameSchema,
    sync_variant: syncVariantSchema.optional(),
    provider_config_key: z.string().min(1).max(255),
    connection_id: connectionIdSchema,
    frequency: syncFrequencySchema.nullable(),
  })
  .strict();
export type SyncFrequencyBody = z.infer<typeof syncFrequencyBodySchema>;

export const syncVariantParamsSchema = z
  .object({ name: functionNameSchema, variant: syncVariantSchema })
  .strict();
export const syncVariantBodySchema = z
  .object({ provider_config_key: z.string().min(1).max(255), connection_id: connectionIdSchema })
  .strict();

// ---- answers ------------------------------------------------------------------------------------

export const syncSuccessSchema = z.object({ success: z.literal(true) });

export const modelCountsSchema = z.object({
  added: z.number().int(),
  updated: z.number().int(),
  deleted: z.number().int(),
});
export type ModelCountsWire = z.infer<typeof modelCountsSchema>;

export const SYNC_STATUSES = ['RUNNING', 'SUCCESS', 'ERROR', 'PAUSED', 'STOPPED'] as const;
export type SyncStatusValue = (typeof SYNC_STATUSES)[number];

export const syncStatusItemSchema = z.object({
  id: z.string(),
  connection_id: z.string(),
  name: z.string(),
  variant: z.string(),
  status: z.enum(SYNC_STATUSES),
  /** Deprecated in Nango: INITIAL until the sync completed a run, INCREMENTAL after. */
  type: z.enum(['INCREMENTAL', 'INITIAL']),
  finishedAt: z.string().nullable(),
  nextScheduledSyncAt: z.string().nullable(),
  frequency: z.string().nullable(),
  latestResult: z.record(z.string(), modelCountsSchema).nullable(),
  latestExecutionStatus: z.enum(['RUNNING', 'SUCCESS', 'STOPPED']).nullable(),
  recordCount: z.record(z.string(), z.number().int()),
  checkpoint: z.record(z.string(), z.unknown()).nullable(),
});
export type SyncStatusItem = z.infer<typeof syncStatusItemSchema>;
export const syncStatusResponseSchema = z.object({ syncs: z.array(syncStatusItemSchema) });
export type SyncStatusResponse = z.infer<typeof syncStatusResponseSchema>;

export const syncFrequencyResponseSchema = z.object({ frequency: z.string() });
export const syncVariantResponseSchema = z.object({ id: z.string(), name: z.string(), variant: z.string() });
export type SyncVariantResponse = z.infer<typeof syncVariantResponseSchema>;

// ---- NATS requests (gateway → orchestrator) ------------------------------------------------------

const syncTarget = {
  caller: callerSchema,
  providerConfigKey: z.string(),
  connectionId: z.string().optional(),
  syncs: z.array(z.object({ name: z.string(), variant: z.string() })),
};

export const syncTriggerRequestSchema = z.object({
  ...syncTarget,
  /** `opts.reset` / `sync_mode` other than incremental: clear the checkpoint and `lastSyncDate` first. */
  reset: z.boolean().default(false),
  /** `opts.emptyCache` / `full_refresh_and_clear_cache`: delete the sync's records first. */
  emptyCache: z.boolean().default(false),
});
export type SyncTriggerRequest = z.infer<typeof syncTriggerRequestSchema>;

export const syncCommandRequestSchema = z.object(syncTarget);
export type SyncCommandRequest = z.infer<typeof syncCommandRequestSchema>;

export const syncStatusRequestSchema = z.object({
  ...syncTarget,
  /** `syncs=*`: every sync (of the connection, or of the integration). */
  all: z.boolean(),
});
export type SyncStatusRequest = z.infer<typeof syncStatusRequestSchema>;

export const syncFrequencyRequestSchema = z.object({
  caller: callerSchema,
  providerConfigKey: z.string(),
  connectionId: z.string(),
  name: z.string(),
  variant: z.string(),
  frequency: z.string().nullable(),
});
export type SyncFrequencyRequest = z.infer<typeof syncFrequencyRequestSchema>;

export const syncVariantRequestSchema = z.object({
  caller: callerSchema,
  providerConfigKey: z.string(),
  connectionId: z.string(),
  name: z.string(),
  variant: z.string(),
});
export type SyncVariantRequest = z.infer<typeof syncVariantRequestSchema>;

/** Sync commands and status (sync-orchestrator answers). */
export const SYNC_REQUESTS = {
  trigger: natsRequest({
    subject: SYNC_SUBJECTS.trigger,
    request: syncTriggerRequestSchema,
    reply: successReplySchema,
  }),
  pause: natsRequest({
    subject: SYNC_SUBJECTS.pause,
    request: syncCommandRequestSchema,
    reply: successReplySchema,
  }),
  start: natsRequest({
    subject: SYNC_SUBJECTS.start,
    request: syncCommandRequestSchema,
    reply: successReplySchema,
  }),
  status: natsRequest({
    subject: SYNC_SUBJECTS.status,
    request: syncStatusRequestSchema,
    reply: syncStatusResponseSchema,
  }),
  frequency: natsRequest({
    subject: SYNC_SUBJECTS.frequency,
    request: syncFrequencyRequestSchema,
    reply: syncFrequencyResponseSchema,
  }),
  variantCreate: natsRequest({
    subject: SYNC_SUBJECTS.variantCreate,
    request: syncVariantRequestSchema,
    reply: syncVariantResponseSchema,
  }),
  variantDelete: natsRequest({
    subject: SYNC_SUBJECTS.variantDelete,
    request: syncVariantRequestSchema,
    reply: successReplySchema,
  }),
};
