import { z } from 'zod';
import { natsRequest } from './nats-request';
import { callerSchema } from './context';

/**
 * The records a sync saves: the public `GET /records` / `PATCH /records/prune` shapes (Nango's, validated as
 * Nango validates them) and the NATS subjects sync-orchestrator answers for the gateway and for a sync
 * run's script (functions-runtime's host calls). The orchestrator owns the records store.
 */
export const RECORDS_SUBJECTS = {
  /**
   * gateway → orchestrator: one page of `GET /records` (bounded in bytes so a reply fits one NATS message),
   * a raw reply (`serveRaw` in @switchboard/messaging): the `RecordsListReply` envelope line, then the
   * records' JSON bytes.
   */
  list: 'orchestrator.v1.records.page',
  /** gateway → orchestrator: `PATCH /records/prune`. */
  prune: 'orchestrator.v1.records.prune',
  /** runtime → orchestrator: `batchSave` / `batchUpdate` / `batchDelete` of a sync run. */
  write: 'orchestrator.v1.records.write',
  /** runtime → orchestrator: `getRecordsByIds`. */
  getByIds: 'orchestrator.v1.records.get-by-ids',
  /** runtime → orchestrator: `trackDeletesStart` (opens the model's deletion window, or joins it). */
  trackDeletesStart: 'orchestrator.v1.records.track-deletes-start',
  /** runtime → orchestrator: `trackDeletesEnd` (`window: true`) / `deleteRecordsFromPreviousExecutions`. */
  deleteUnseen: 'orchestrator.v1.records.delete-unseen',
  /** runtime → orchestrator: where `setMergingStrategy({strategy: 'ignore_if_modified_after'})` starts. */
  lastCursor: 'orchestrator.v1.records.last-cursor',
  /** runtime → orchestrator: `listRecords` (a page of the sync's own records of one model, by cursor). */
  listForRun: 'orchestrator.v1.records.list-for-run',
} as const;

/** Nango's model name (`models` of a sync) and variant alphabets. */
export const recordModelSchema = z
  .string()
  .max(255)
  .regex(/^[A-Z][a-zA-Z0-9_-]+$/, 'must start with an upper-case letter, then letters, digits, "_" or "-"');
export const recordVariantSchema = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[a-zA-Z0-9_-]+$/, 'may hold only letters, digits, "_" and "-"');

/** The key records are stored under: `Model` for the base variant, `Model::variant` otherwise (as Nango). */
export function recordModelKey(model: string, variant?: string | null): string {
  return variant && variant !== 'base' ? `${model}::${variant}` : model;
}

/** Records in one script call and in one store statement (Nango's batch size). */
export const RECORDS_BATCH_SIZE = 1000;
/** Largest JSON of one record a script may save (a batch travels to the orchestrator in NATS messages). */
export const MAX_RECORD_BYTES = 512 * 1024;
/** Bytes of records in one message between the runtime or gateway and the orchestrator, on a NATS server
 * with the default 1 MB `max_payload`. */
export const RECORDS_MESSAGE_BYTES = 640 * 1024;
/** Records never fill more of a message than this, whatever the server allows. */
const RECORDS_MESSAGE_BYTES_CEILING = 4 * 1024 * 1024;

/**
 * Bytes of records one message may carry on a server announcing `maxPayload` (the NATS client's
 * `info.max_payload`): 60 % of it, leaving room for JSON escaping and the envelope, between the 1 MB
 * server's budget and 4 MiB. A 1000-record page of 1 KB records is then one message on the generated
 * configuration (8 MB) instead of three round trips.
 */
export function recordsMessageBytes(maxPayload: number | undefined): number {
  if (!maxPayload || maxPayload <= 0) return RECORDS_MESSAGE_BYTES;
  return Math.max(
    RECORDS_MESSAGE_BYTES,
    Math.min(RECORDS_MESSAGE_BYTES_CEILING, Math.floor(maxPayload * 0.6)),
  );
}

// ---- public API -------------------------------------------------------------------------------------

/** Nango accepts `modified_after`/`delta` only within the last 12 months. */
const LOOKBACK_MS = 365 * 24 * 60 * 60 * 1000;
const withinLookback = z.iso
  .datetime({ offset: true })
  .refine((value) => Date.parse(value) >= Date.now() - LOOKBACK_MS, {
    message: 'must be within the last 12 months',
  });

const FILTER_VALUES = ['added', 'updated', 'deleted'];

/** `GET /records` query, strict like Nango's (unknown keys are refused). */
export const listRecordsQuerySchema = z
  .object({
    model: recordModelSchema,
    variant: recordVariantSchema.optional(),
    delta: withinLookback.optional(),
    modified_after: withinLookback.optional(),
    limit: z.coerce.number().int().min(1).max(10_000).default(100),
    /** Comma list of added|updated|deleted, any case. */
    filter: z
      .string()
      .refine((value) => value.split(',').every((v) => FILTER_VALUES.includes(v.toLowerCase())), {
        message: 'must be a comma-separated list of added, updated, deleted',
      })
      .optional(),
    cursor: z.string().min(1).max(1000).optional(),
    /** External ids; repeated (`ids=a&ids=b`) or once. */
    ids: z
      .union([z.string().min(1).max(256), z.array(z.string().min(1).max(256)).min(1).max(100)])
      .transform((value) => (Array.isArray(value) ? value : [value]))
      .optional(),
  })
  .strict();
export type ListRecordsQuery = z.infer<typeof listRecordsQuerySchema>;

export const LAST_ACTIONS = ['ADDED', 'UPDATED', 'DELETED'] as const;

export const nangoRecordMetadataSchema = z.object({
  first_seen_at: z.string(),
  last_modified_at: z.string(),
  last_action: z.enum(LAST_ACTIONS),
  deleted_at: z.string().nullable(),
  pruned_at: z.string().nullable(),
  cursor: z.string(),
});
export type NangoRecordMetadata = z.infer<typeof nangoRecordMetadataSchema>;

/** A record as `GET /records` returns it: the payload, `id` (always the external id) and `_nango_metadata`. */
export const nangoRecordSchema = z
  .object({ id: z.string(), _nango_metadata: nangoRecordMetadataSchema })
  .catchall(z.unknown())
  .meta({ id: 'NangoRecord' });
export type NangoRecord = z.infer<typeof nangoRecordSchema>;

export const listRecordsResponseSchema = z.object({
  records: z.array(nangoRecordSchema),
  next_cursor: z.string().nullable(),
});
export type ListRecordsResponse = z.infer<typeof listRecordsResponseSchema>;

export const pruneRecordsBodySchema = z
  .object({
    model: recordModelSchema,
    variant: recordVariantSchema.optional(),
    until_cursor: z.string().min(1).max(1000),
    limit: z.coerce.number().int().min(1).max(10_000).optional(),
  })
  .strict();
export type PruneRecordsBody = z.infer<typeof pruneRecordsBodySchema>;

export const pruneRecordsResponseSchema = z.object({ count: z.number().int(), has_more: z.boolean() });
export type PruneRecordsResponse = z.infer<typeof pruneRecordsResponseSchema>;

// ---- gateway → orchestrator ---------------------------------------------------------------------------

const connectionScope = {
  caller: callerSchema,
  providerConfigKey: z.string().min(1).max(255),
  connectionId: z.string().min(1).max(255),
};

/** One page of records; `model` is the full key (`Model::variant` when not base). */
export const recordsListRequestSchema = z.object({
  ...connectionScope,
  model: z.string().min(1).max(512),
  modifiedAfter: z.string().optional(),
  limit: z.number().int().min(1).max(10_000),
  filter: z.string().optional(),
  cursor: z.string().optional(),
  ids: z.array(z.string()).max(100).optional(),
  /** The first page of a request checks that the connection exists (`unknown_connection`). */
  checkConnection: z.boolean().default(true),
});
export type RecordsListRequest = z.input<typeof recordsListRequestSchema>;
/**
 * The metadata of a page of `RECORDS_SUBJECTS.list`; the reply's body (after the envelope line) is the
 * records as JSON text joined by commas (no brackets), which the gateway writes into its answer as bytes,
 * without decoding or parsing them.
 */
export interface RecordsListReply {
  count: number;
  next_cursor: string | null;
}

export const recordsPruneRequestSchema = z.object({
  ...connectionScope,
  model: z.string().min(1).max(512),
  untilCursor: z.string().min(1).max(1000),
  limit: z.number().int().min(1).max(10_000),
});
export type RecordsPruneRequest = z.infer<typeof recordsPruneRequestSchema>;

// ---- a sync run's script (functions-runtime) → orchestrator ------------------------------------------

/**
 * Everything a sync run's records call is scoped by, filled in by functions-runtime from the run request
 * (never from the script): the environment, the run's connection, the run id (the generation records are
 * stamped with) and the full model key, which the runtime has checked against the sync's declared models.
 */
const runScope = {
  ...connectionScope,
  runId: z.string().uuid(),
  /**
   * The attempt of the run the script belongs to. Writes (records, deletes of unseen records) are fenced:
   * refused with `sync_run_superseded` unless the run is still RUNNING and this is its latest attempt.
   * Absent (a runtime older than the fence), only the run is checked.
   */
  attempt: z.number().int().min(1).optional(),
  model: z.string().min(1).max(512),
};

export const mergingStrategySchema = z.discriminatedUnion('strategy', [
  z.object({ strategy: z.literal('override') }),
  z.object({ strategy: z.literal('ignore_if_modified_after'), cursor: z.string().nullable().optional() }),
]);
export type MergingStrategyWire = z.infer<typeof mergingStrategySchema>;

export const RECORD_WRITE_OPS = ['save', 'update', 'delete'] as const;
export type RecordWriteOp = (typeof RECORD_WRITE_OPS)[number];

export const recordsWriteRequestSchema = z.object({
  ...runScope,
  op: z.enum(RECORD_WRITE_OPS),
  records: z.array(z.record(z.string(), z.unknown())).max(RECORDS_BATCH_SIZE),
  merging: mergingStrategySchema.optional(),
});
export type RecordsWriteRequest = z.infer<typeof recordsWriteRequestSchema>;

export const recordsWriteReplySchema = z.object({
  added: z.number().int(),
  updated: z.number().int(),
  deleted: z.number().int(),
  unchanged: z.number().int(),
  nonUniqueKeys: z.array(z.string()),
  mergingCursor: z.string().nullable().optional(),
});
export type RecordsWriteReply = z.infer<typeof recordsWriteReplySchema>;

export const recordsGetByIdsRequestSchema = z.object({
  ...runScope,
  ids: z.array(z.string().max(256)).min(1).max(RECORDS_BATCH_SIZE),
  cursor: z.string().optional(),
});
export type RecordsGetByIdsRequest = z.infer<typeof recordsGetByIdsRequestSchema>;

export const recordsRunScopeRequestSchema = z.object(runScope);

export const recordsListForRunRequestSchema = z.object({
  ...runScope,
  limit: z.number().int().min(1).max(RECORDS_BATCH_SIZE),
  cursor: z.string().max(1000).optional(),
});
export type RecordsListForRunRequest = z.infer<typeof recordsListForRunRequestSchema>;

/**
 * `deleteUnseen`: without `window`, what this run did not save is deleted
 * (`deleteRecordsFromPreviousExecutions`); with it (`trackDeletesEnd`), what no run of the model's open
 * deletion window saved, and the window closes.
 */
export const recordsDeleteUnseenRequestSchema = z.object({ ...runScope, window: z.boolean().optional() });
export type RecordsDeleteUnseenRequest = z.infer<typeof recordsDeleteUnseenRequestSchema>;

/** How many deleted external ids `trackDeletesEnd` hands back to the script at most (the count is exact). */
export const MAX_DELETED_KEYS_REPLY = 10_000;
export type RecordsRunScopeRequest = z.infer<typeof recordsRunScopeRequestSchema>;

/** What a sync run does with its records, and the records API's prune (sync-orchestrator answers). */
export const RECORDS_REQUESTS = {
  prune: natsRequest({
    subject: RECORDS_SUBJECTS.prune,
    request: recordsPruneRequestSchema,
    reply: pruneRecordsResponseSchema,
  }),
  /** A batch of records, checked once by the handler (the caller would walk every record again). */
  write: natsRequest({
    subject: RECORDS_SUBJECTS.write,
    request: recordsWriteRequestSchema,
    reply: recordsWriteReplySchema,
    validateOnSend: false,
  }),
  getByIds: natsRequest({
    subject: RECORDS_SUBJECTS.getByIds,
    request: recordsGetByIdsRequestSchema,
    reply: listRecordsResponseSchema,
  }),
  listForRun: natsRequest({
    subject: RECORDS_SUBJECTS.listForRun,
    request: recordsListForRunRequestSchema,
    reply: listRecordsResponseSchema,
  }),
  trackDeletesStart: natsRequest({
    subject: RECORDS_SUBJECTS.trackDeletesStart,
    request: recordsRunScopeRequestSchema,
    reply: z.null(),
  }),
  deleteUnseen: natsRequest({
    subject: RECORDS_SUBJECTS.deleteUnseen,
    request: recordsDeleteUnseenRequestSchema,
    reply: z.object({ deleted: z.number().int(), deletedKeys: z.array(z.string()) }),
  }),
  lastCursor: natsRequest({
    subject: RECORDS_SUBJECTS.lastCursor,
    request: recordsRunScopeRequestSchema,
    reply: z.object({ cursor: z.string().nullable() }),
  }),
};
