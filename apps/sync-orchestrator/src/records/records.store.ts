import { EnvelopeCipher, type MasterKeyring, type SharedDataKey } from '@switchboard/crypto';
import type { PgPool, PgPoolClient, PgQueryConfig } from '@switchboard/db';
import deepmerge from 'deepmerge';
import { OrchestratorError } from '../sync-orchestrator.errors';
import { binaryByteaArray, binaryTextArray } from './pg-binary-array';
import { copyOut } from './pg-copy-out';
import {
  Cursor,
  RecordIds,
  dataHash,
  externalIdOf,
  payloadAad,
  type DecodedCursor,
  type RecordScope,
} from './record-keys';

export type { RecordScope } from './record-keys';

export interface ModelCounts {
  added: number;
  updated: number;
  deleted: number;
}

export type WriteOp = 'save' | 'update' | 'delete';

/**
 * `nango.setMergingStrategy`: `override` (default) writes every change; `ignore_if_modified_after` leaves
 * alone a record modified after `cursor` (e.g. by a webhook run while this run was fetching), and the
 * cursor then moves with the run's own writes (`WriteResult.mergingCursor`), as Nango does.
 */
export type MergingStrategy =
  | { strategy: 'override' }
  | { strategy: 'ignore_if_modified_after'; cursor?: string | null };

export interface WriteResult extends ModelCounts {
  unchanged: number;
  /** External ids that appeared more than once in the batch: only the first one was written. */
  nonUniqueKeys: string[];
  /** Under `ignore_if_modified_after`: the cursor to send with the next write of the model. */
  mergingCursor?: string | null;
}

export type LastAction = 'ADDED' | 'UPDATED' | 'DELETED';

export interface NangoRecordMetadata {
  first_seen_at: string;
  last_modified_at: string;
  last_action: LastAction;
  deleted_at: string | null;
  pruned_at: string | null;
  cursor: string;
}

export type StoredRecord = Record<string, unknown> & { id: string; _nango_metadata: NangoRecordMetadata };

export interface ListQuery {
  modifiedAfter?: string;
  limit: number;
  /** Nango's `filter` (comma list of added|updated|deleted, any case). */
  filter?: string;
  cursor?: string;
  externalIds?: string[];
  /** Stop before the page's records pass this many bytes of JSON (always at least one record). */
  maxBytes?: number;
}

export interface ListResult {
  records: StoredRecord[];
  next_cursor: string | null;
}

/**
 * A page as JSON: the records' JSON joined by commas (no brackets), in order, ready to be spliced into a
 * body (chunks, not one buffer: whoever sends them joins them once, with whatever goes before). Saved bytes
 * stay bytes; the short pieces written here (metadata, commas) stay text, encoded straight into that one
 * buffer (a Buffer per piece cost the orchestrator a new 8 KB pool every ~20 records).
 */
export interface ListJsonResult {
  recordsJson: (Buffer | string)[];
  count: number;
  next_cursor: string | null;
}

/** One record of a page, its payload still as the JSON bytes it was saved as. */
interface PageRecord {
  /** The decrypted payload (UTF-8 JSON), null when pruned: a view of a buffer the next record reuses. */
  payload: Buffer | null;
  externalId: string;
  metadata: StoredRecord['_nango_metadata'];
}

/** A node-postgres client inside BEGIN: every statement of the store runs on one (no Prisma in between). */
type Tx = Pick<PgPoolClient, 'query'>;

/** The transaction's own client: also escapes the literals of the statements sent with BEGIN and COMMIT. */
type TxClient = Pick<PgPoolClient, 'query' | 'escapeLiteral'>;

/**
 * Checks, first thing in a write's transaction, that the writer may still write (a sync script's run is
 * still the current one); throws to refuse, nothing written.
 */
export type WriteFence = (tx: Tx) => Promise<void>;

/** Rows per statement: one set-based statement per chunk, as Nango's batch size. */
const CHUNK = 1000;

interface Incoming {
  id: string;
  externalId: string;
  record: Record<string, unknown>;
}

interface Existing {
  id: string;
  data_hash: string;
  deleted: boolean;
  pruned: boolean;
  /** Modified after the merging cursor: `ignore_if_modified_after` leaves it alone. */
  locked: boolean;
  payload: Buffer | null;
}

/** A saved record's JSON and its data_hash. */
interface Hashed {
  json: string;
  hash: string;
}
const hashRecord = (incoming: Incoming): Hashed => {
  const json = JSON.stringify(incoming.record);
  return { json, hash: dataHash(json) };
};

interface Write {
  id: string;
  externalId: string;
  hash: string;
  payload: Buffer;
  size: number;
  /** A change the customer sees: updated_at moves. A pruned payload restored unchanged keeps it. */
  touch: boolean;
}

/** Prints a timestamptz as Postgres's to_json does in UTC (microseconds, `+00:00`), as Nango's API shows it. */
const ts = (column: string) => `((to_json(${column} AT TIME ZONE 'UTC') #>> '{}') || '+00:00')`;

/** The statements of a write, prepared once per connection (named): parsed and planned once, not per batch. */
const SQL = {
  lock: 'SELECT pg_advisory_xact_lock(hashtextextended($1, 0))',
  /** The same lock as a literal statement, sent with BEGIN in one round trip (simple protocol). */
  lockLiteral: (key: string) => `SELECT pg_advisory_xact_lock(hashtextextended(${key}, 0))`,
  /**
   * The chunk's rows as they are; with `seen`, also records that the run saw these ids (track deletes).
   * `$` gives the values: parameters (`$1`…), or literals for a COPY.
   */
  existing: (cursor: boolean, payload: boolean, seen: boolean, $: (n: number) => string = (n) => `$${n}`) => `
    ${seen ? `WITH seen AS (INSERT INTO orchestrator.record_seen (run_id, model, record_ids) VALUES (${$(4)}::uuid, ${$(5)}, ${$(1)}::uuid[]))` : ''}
    SELECT id::text, data_hash, deleted_at IS NOT NULL, pruned_at IS NOT NULL,
      ${cursor ? `(updated_at, id) > (${$(2)}::timestamptz, ${$(3)}::uuid)` : `false AND ${$(2)}::text IS NULL AND ${$(3)}::text IS NULL`},
      ${payload ? 'payload' : 'NULL::bytea'}
    FROM orchestrator.records WHERE id = ANY(${$(1)}::uuid[])`,
  // One set-based statement for the whole chunk (unnest of column arrays): per-row ORM upserts run at a
  // few hundred rows a second, this at tens of thousands (see bench/records). Unchanged records are
  // filtered out before, so they cost no write at all and keep their updated_at.
  upsert: `
    INSERT INTO orchestrator.records AS r (id, environment_id, provider_config_key, connection_id, model,
      external_id, data_hash, payload, size_bytes, created_at, updated_at, deleted_at, pruned_at, last_run_id)
    SELECT u.id, $1, $2, $3, $4, u.external_id, u.data_hash, u.payload, u.size_bytes, now(),
      CASE WHEN u.touch THEN now() ELSE '-infinity'::timestamptz END, NULL, NULL, $5::uuid
    FROM unnest($6::uuid[], $7::text[], $8::text[], $9::bytea[], $10::int[], $11::bool[])
      AS u(id, external_id, data_hash, payload, size_bytes, touch)
    ON CONFLICT (id) DO UPDATE SET
      data_hash = EXCLUDED.data_hash, payload = EXCLUDED.payload, size_bytes = EXCLUDED.size_bytes,
      updated_at = CASE WHEN EXCLUDED.updated_at = '-infinity' THEN r.updated_at ELSE EXCLUDED.updated_at END,
      deleted_at = NULL, pruned_at = NULL, last_run_id = EXCLUDED.last_run_id`,
  // The record keeps its last payload; deleted_at is the record's `deletedAt` when it gives one.
  delete: `
    UPDATE orchestrator.records r
    SET deleted_at = COALESCE(u.deleted_at, now()), updated_at = now(), last_run_id = $1::uuid
    FROM unnest($2::uuid[], $3::timestamptz[]) AS u(id, deleted_at)
    WHERE r.id = u.id`,
  /** The run's counts and the model's total in one statement; answers the transaction's now() (merging cursor). */
  // Sent with COMMIT in one round trip (simple protocol, so no parameters): every value is a literal
  // escaped by the client (escapeLiteral) or an integer.
  count: (v: {
    runId: string;
    model: string;
    added: number;
    updated: number;
    deleted: number;
    environmentId: number;
    providerConfigKey: string;
    connectionId: string;
  }) => `
    WITH run AS (
      INSERT INTO orchestrator.record_run_counts (run_id, model, added, updated, deleted)
      VALUES (${v.runId}::uuid, ${v.model}, ${v.added}, ${v.updated}, ${v.deleted})
      ON CONFLICT (run_id, model) DO UPDATE SET
        added = record_run_counts.added + EXCLUDED.added,
        updated = record_run_counts.updated + EXCLUDED.updated,
        deleted = record_run_counts.deleted + EXCLUDED.deleted
    ), total AS (
      INSERT INTO orchestrator.record_counts (environment_id, provider_config_key, connection_id, model, count)
      SELECT ${v.environmentId}, ${v.providerConfigKey}, ${v.connectionId}, ${v.model}, ${v.added - v.deleted}
      WHERE ${v.added - v.deleted} <> 0
      ON CONFLICT (environment_id, provider_config_key, connection_id, model)
      DO UPDATE SET count = record_counts.count + EXCLUDED.count
    )
    SELECT ${ts('now()')} AS now`,
};

const COMMA = 0x2c;
const CLOSE_BRACE = 0x7d;
const METADATA_KEY = Buffer.from('"_nango_metadata"');

/**
 * A record's JSON as `JSON.stringify({...payload, id: externalId, _nango_metadata})` writes it, in one or
 * two chunks (the saved bytes, text). The usual case (the payload's first key is `id`, already that string, and it has no
 * `_nango_metadata` key) is spliced from the saved bytes, never decoded to text; anything else goes through
 * JSON.parse and JSON.stringify.
 */
export function recordJson(
  payload: Buffer | null,
  externalId: string,
  metadata: StoredRecord['_nango_metadata'],
): (Buffer | string)[] {
  const meta = JSON.stringify(metadata);
  const head = `{"id":${JSON.stringify(externalId)}`;
  if (payload === null) return [`${head},"_nango_metadata":${meta}}`];
  const headLength = Buffer.byteLength(head);
  const next = payload[headLength];
  if (
    (next === COMMA || next === CLOSE_BRACE) &&
    payload[payload.length - 1] === CLOSE_BRACE &&
    startsWith(payload, head, headLength) &&
    payload.indexOf(METADATA_KEY) < 0
  ) {
    return [payload.subarray(0, -1), `,"_nango_metadata":${meta}}`];
  }
  return [
    JSON.stringify({
      ...(JSON.parse(payload.toString('utf8')) as Record<string, unknown>),
      id: externalId,
      _nango_metadata: metadata,
    }),
  ];
}

/**
 * Whether `bytes` begin with `text`'s UTF-8 (`byteLength` long). ASCII text, the usual id, is compared as
 * latin1 (one character per byte, so equal text means equal bytes) without encoding it to a Buffer.
 */
function startsWith(bytes: Buffer, text: string, byteLength: number): boolean {
  if (bytes.length < byteLength) return false;
  if (byteLength === text.length) return bytes.toString('latin1', 0, byteLength) === text;
  return bytes.subarray(0, byteLength).equals(Buffer.from(text));
}

/** Nango merges arrays element by element (a shorter update keeps the old tail), objects key by key. */
const mergeRecord = (target: unknown, source: unknown): Record<string, unknown> =>
  deepmerge(target as object, source as object, {
    arrayMerge: (old: unknown[], incoming: unknown[]) =>
      Array.from({ length: Math.max(old.length, incoming.length) }, (_, i) =>
        i < incoming.length
          ? i < old.length && isMergeable(old[i]) && isMergeable(incoming[i])
            ? mergeRecord(old[i], incoming[i])
            : incoming[i]
          : old[i],
      ),
  }) as Record<string, unknown>;
const isMergeable = (v: unknown) => v !== null && typeof v === 'object';

/**
 * The records store: what syncs save, per connection and model, with Nango's semantics (stable uuidv5 ids,
 * md5 change detection, soft deletes, `(updated_at, id)` cursors). Payloads are sealed with the master keys
 * (envelope encryption with one data key per written chunk, `EnvelopeCipher.sharedKey`, the row id as
 * associated data). Writes of one (connection, model) are serialised by
 * a transaction-scoped advisory lock, so concurrent batches never race on the same rows or counters.
 *
 * Every statement goes through node-postgres directly (`pool`, not the Prisma client): for these set-based
 * statements Prisma's driver-adapter layer was most of the cost (bench/README.md, "Why the current settings").
 *
 * Built by the Nest module for the service and directly (`new RecordsStore(pool, keyring)`) by the worker.
 */
export class RecordsStore {
  private readonly cipher: EnvelopeCipher;
  /** See `scratchCopy`. */
  private scratch = Buffer.allocUnsafe(64 * 1024);
  /** Where a page's payloads are decrypted, one after the other (`plainScratch`). */
  private plain = Buffer.allocUnsafe(64 * 1024);

  constructor(
    private readonly pool: PgPool,
    keyring: MasterKeyring,
  ) {
    this.cipher = new EnvelopeCipher(keyring);
  }

  /** batchSave / batchUpdate / batchDelete of one run; `model` is the full model key (`Model::variant` when not base). */
  async write(
    scope: RecordScope,
    model: string,
    records: Record<string, unknown>[],
    op: WriteOp,
    runId: string,
    options: { merging?: MergingStrategy; fence?: WriteFence } = {},
  ): Promise<WriteResult> {
    const ids = new RecordIds(scope, model);
    const { unique, nonUniqueKeys } = this.prepare(records, ids);
    const merging = options.merging ?? { strategy: 'override' };
    const cursor =
      merging.strategy === 'ignore_if_modified_after' && merging.cursor
        ? Cursor.decode(merging.cursor)
        : undefined;
    const result: WriteResult = { added: 0, updated: 0, deleted: 0, unchanged: 0, nonUniqueKeys };
    if (merging.strategy === 'ignore_if_modified_after') result.mergingCursor = merging.cursor ?? null;
    if (unique.length === 0) return result;

    // Without a fence the lock is the transaction's first statement and goes with BEGIN; with one, the
    // fence comes first (as before: the run's row, then the model's lock).
    const fence = options.fence;
    const begin = fence ? undefined : (tx: TxClient) => SQL.lockLiteral(lockKey(tx, scope, model));
    await this.transaction(async (tx) => {
      if (fence) {
        await fence(tx);
        await this.lock(tx, scope, model);
      }
      let lastWritten: string | undefined;
      for (let i = 0; i < unique.length; i += CHUNK) {
        const chunk = unique.slice(i, i + CHUNK);
        const seen = op === 'delete' ? undefined : { runId, model };
        // The chunk's existing rows are read while this process serialises and hashes the records (the
        // statement is on the wire before the work starts): node's CPU and Postgres's overlap.
        const pending = this.existing(tx, chunk, cursor, op === 'update', seen);
        pending.catch(() => undefined); // awaited below; a throw in between must not leave it unhandled
        const hashed = op === 'save' ? chunk.map(hashRecord) : undefined;
        const existing = await pending;
        const outcome =
          op === 'delete'
            ? await this.deleteChunk(tx, chunk, existing, runId)
            : await this.upsertChunk(tx, scope, model, chunk, existing, runId, op, hashed);
        result.added += outcome.added;
        result.updated += outcome.updated;
        result.deleted += outcome.deleted;
        result.unchanged += outcome.unchanged;
        if (outcome.maxTouched && (!lastWritten || outcome.maxTouched > lastWritten)) {
          lastWritten = outcome.maxTouched;
        }
      }
      // The run's counts and the model's total go with COMMIT (one round trip); the answer is now().
      return {
        commitWith: this.countStatement(tx, scope, model, runId, result),
        committed: (rows) => {
          if (merging.strategy === 'ignore_if_modified_after' && lastWritten) {
            // Every row this transaction touched carries its start time (now()): the last one written is
            // (now(), greatest id), which is where the next batch's cursor starts.
            result.mergingCursor = Cursor.encode((rows[0] as { now: string }).now, lastWritten);
          }
        },
      };
    }, begin);
    return result;
  }

  /** What one sync run changed, per model (survives worker restarts: it is in Postgres). */
  async runCounts(runId: string): Promise<Record<string, ModelCounts>> {
    const { rows } = await this.pool.query<ModelCounts & { model: string }>(
      'SELECT model, added, updated, deleted FROM orchestrator.record_run_counts WHERE run_id = $1::uuid',
      [runId],
    );
    return Object.fromEntries(
      rows.map((r) => [r.model, { added: r.added, updated: r.updated, deleted: r.deleted }]),
    );
  }

  /** Hard-deletes every record of these models (emptyCache, a full resync clearing the cache, a deleted sync). */
  async deleteRecords(scope: RecordScope, models: string[]): Promise<number> {
    let total = 0;
    const sorted = [...new Set(models)].sort();
    if (sorted.length === 0) return 0;
    const values = [scope.environmentId, scope.providerConfigKey, scope.connectionId, sorted];
    await this.transaction(async (tx) => {
      // Always in the same order, so two deletions of overlapping model sets cannot deadlock.
      for (const model of sorted) await this.lock(tx, scope, model);
      const deleted = await tx.query(
        `DELETE FROM orchestrator.records
        WHERE environment_id = $1 AND provider_config_key = $2 AND connection_id = $3 AND model = ANY($4::text[])`,
        values,
      );
      total = deleted.rowCount ?? 0;
      await tx.query(
        `DELETE FROM orchestrator.record_counts
        WHERE environment_id = $1 AND provider_config_key = $2 AND connection_id = $3 AND model = ANY($4::text[])`,
        values,
      );
      await this.dropWindows(tx, scope, sorted);
    });
    return total;
  }

  /** Hard-deletes every record of a connection, all models (the connection was deleted). */
  async deleteAllRecords(scope: RecordScope): Promise<number> {
    const { rows } = await this.pool.query<{ model: string }>(
      `SELECT model FROM orchestrator.record_counts
      WHERE environment_id = $1 AND provider_config_key = $2 AND connection_id = $3
      UNION
      SELECT DISTINCT model FROM orchestrator.records
      WHERE environment_id = $1 AND provider_config_key = $2 AND connection_id = $3
      UNION
      SELECT model FROM orchestrator.record_delete_windows
      WHERE environment_id = $1 AND provider_config_key = $2 AND connection_id = $3`,
      [scope.environmentId, scope.providerConfigKey, scope.connectionId],
    );
    return this.deleteRecords(
      scope,
      rows.map((r) => r.model),
    );
  }

  /** Non-deleted records per model (sync status `recordCount`); a model without records counts 0. */
  async recordCounts(scope: RecordScope, models: string[]): Promise<Record<string, number>> {
    const { rows } = await this.pool.query<{ model: string; count: number }>(
      `SELECT model, count FROM orchestrator.record_counts
      WHERE environment_id = $1 AND provider_config_key = $2 AND connection_id = $3 AND model = ANY($4::text[])`,
      [scope.environmentId, scope.providerConfigKey, scope.connectionId, models],
    );
    const counts = Object.fromEntries(models.map((m) => [m, 0]));
    for (const row of rows) counts[row.model] = row.count;
    return counts;
  }

  /**
   * Track deletes: soft-deletes every record of the model that this run did not save (in any of its
   * attempts: the run id is the generation). Counted in the run's `deleted`.
   */
  async deleteUnseen(scope: RecordScope, model: string, runId: string): Promise<number> {
    return (await this.deleteUnseenKeys(scope, model, runId, 0)).deleted;
  }

  /**
   * `trackDeletesStart`: opens the model's deletion window with this run, or adds the run to the window
   * an earlier run opened and did not close (a checkpointed full refresh that spans several runs, each
   * calling it at its start). Idempotent within a run.
   */
  async openDeleteWindow(
    scope: RecordScope,
    model: string,
    runId: string,
    fence?: WriteFence,
  ): Promise<void> {
    await this.transaction(async (tx) => {
      await fence?.(tx);
      await tx.query(
        `INSERT INTO orchestrator.record_delete_windows AS w
          (environment_id, provider_config_key, connection_id, model, run_ids)
        VALUES ($1, $2, $3, $4, ARRAY[$5::uuid])
        ON CONFLICT (environment_id, provider_config_key, connection_id, model) DO UPDATE
        SET run_ids = CASE WHEN $5::uuid = ANY(w.run_ids) THEN w.run_ids ELSE w.run_ids || $5::uuid END`,
        [scope.environmentId, scope.providerConfigKey, scope.connectionId, model, runId],
      );
    });
  }

  /**
   * Drops the models' open deletion windows and what their runs saw (a full resync starts over; deleted
   * records need none).
   */
  async closeDeleteWindows(scope: RecordScope, models: string[]): Promise<void> {
    await this.dropWindows(this.pool, scope, models);
  }

  private async dropWindows(db: Tx, scope: RecordScope, models: string[]): Promise<void> {
    for (const window of await this.takeWindows(db, scope, models)) {
      await this.forgetSeen(db, window.runIds, window.model);
    }
  }

  /** Deletes the models' open deletion windows, answering the runs each one held. */
  private async takeWindows(
    db: Tx,
    scope: RecordScope,
    models: string[],
  ): Promise<{ model: string; runIds: string[] }[]> {
    const { rows } = await db.query<{ model: string; run_ids: string[] | null }>(
      `DELETE FROM orchestrator.record_delete_windows
      WHERE environment_id = $1 AND provider_config_key = $2 AND connection_id = $3 AND model = ANY($4::text[])
      RETURNING model, run_ids::text[]`,
      [scope.environmentId, scope.providerConfigKey, scope.connectionId, models],
    );
    return rows.map((r) => ({ model: r.model, runIds: r.run_ids ?? [] }));
  }

  /** Drops what the runs saw of one model. */
  private async forgetSeen(db: Tx, runIds: string[], model: string): Promise<void> {
    if (runIds.length === 0) return;
    await db.query('DELETE FROM orchestrator.record_seen WHERE run_id = ANY($1::uuid[]) AND model = $2', [
      runIds,
      model,
    ]);
  }

  /**
   * `deleteUnseen`, also answering (up to `maxKeys` of) the external ids it deleted, as Nango's SDK does.
   * With `window` (`trackDeletesEnd`), the model's open deletion window closes: what any of its runs saved
   * counts as seen, not only this run's.
   */
  async deleteUnseenKeys(
    scope: RecordScope,
    model: string,
    runId: string,
    maxKeys: number,
    fence?: WriteFence,
    window = false,
  ): Promise<{ deleted: number; deletedKeys: string[] }> {
    let result = { deleted: 0, deletedKeys: [] as string[] };
    await this.transaction(async (tx) => {
      await fence?.(tx);
      await this.lock(tx, scope, model);
      const runs = new Set([runId]);
      if (window) {
        for (const taken of await this.takeWindows(tx, scope, [model])) {
          for (const id of taken.runIds) runs.add(id);
        }
      }
      // An anti-join against the ids the runs saw (a hash anti join, which spills to disk rather than
      // degrading like NOT IN over a large list).
      const {
        rows: [row],
      } = await tx.query<{ deleted: number; keys: string[] | null }>(
        `WITH seen AS MATERIALIZED (
          SELECT DISTINCT unnest(record_ids) AS id FROM orchestrator.record_seen
          WHERE run_id = ANY($7::uuid[]) AND model = $2
        ), gone AS (
          SELECT r.id FROM orchestrator.records r
          WHERE r.environment_id = $3 AND r.provider_config_key = $4
            AND r.connection_id = $5 AND r.model = $2 AND r.deleted_at IS NULL
            AND NOT EXISTS (SELECT 1 FROM seen WHERE seen.id = r.id)
        ), marked AS (
          UPDATE orchestrator.records r
          SET deleted_at = now(), updated_at = now(), last_run_id = $1::uuid
          FROM gone WHERE r.id = gone.id
          RETURNING r.external_id
        )
        SELECT (SELECT count(*)::int FROM marked) AS deleted,
          (SELECT array_agg(external_id) FROM (SELECT external_id FROM marked LIMIT $6) k) AS keys`,
        [runId, model, scope.environmentId, scope.providerConfigKey, scope.connectionId, maxKeys, [...runs]],
      );
      // The earlier runs of a closed window are over: what they saw is needed no more (this run's own
      // rows stay until its end, for track_deletes).
      await this.forgetSeen(
        tx,
        [...runs].filter((id) => id !== runId),
        model,
      );
      const deleted = row?.deleted ?? 0;
      result = { deleted, deletedKeys: row?.keys ?? [] };
      return {
        commitWith: this.countStatement(tx, scope, model, runId, { added: 0, updated: 0, deleted }),
        committed: () => undefined,
      };
    });
    return result;
  }

  /**
   * Forgets which records a run saw (once it is over: its counts stay), except for the models whose
   * deletion window holds the run: the run that closes the window needs them.
   */
  async forgetRun(runId: string): Promise<void> {
    await this.pool.query(
      `DELETE FROM orchestrator.record_seen s WHERE s.run_id = $1::uuid AND NOT EXISTS (
        SELECT 1 FROM orchestrator.record_delete_windows w WHERE w.model = s.model AND $1::uuid = ANY(w.run_ids)
      )`,
      [runId],
    );
  }

  /** Drops what runs started before `before` saw (a backstop for runs whose end was never recorded). */
  async pruneSeen(before: Date): Promise<number> {
    const deleted = await this.pool.query('DELETE FROM orchestrator.record_seen WHERE created_at < $1', [
      before,
    ]);
    return deleted.rowCount ?? 0;
  }

  /** The cursor of the most recently modified record of the model (`setMergingStrategy`'s starting point). */
  async lastCursor(scope: RecordScope, model: string): Promise<string | null> {
    const {
      rows: [row],
    } = await this.pool.query<{ sort: string; id: string }>(
      `SELECT ${ts('updated_at')} AS sort, id::text AS id FROM orchestrator.records
      WHERE environment_id = $1 AND provider_config_key = $2 AND connection_id = $3 AND model = $4
      ORDER BY records.updated_at DESC, records.id DESC LIMIT 1`,
      [scope.environmentId, scope.providerConfigKey, scope.connectionId, model],
    );
    return row ? Cursor.encode(row.sort, row.id) : null;
  }

  /**
   * A page of records, Nango's `GET /records`: ordered by (updated_at, id), `next_cursor` set when more
   * exist. Throws `invalid_cursor` (Nango answers it as a server error) for a cursor it cannot read.
   */
  async list(scope: RecordScope, model: string, query: ListQuery): Promise<ListResult> {
    const records: StoredRecord[] = [];
    const page = await this.page(scope, model, query, (r) =>
      records.push({
        ...(r.payload === null ? {} : (JSON.parse(r.payload.toString('utf8')) as Record<string, unknown>)),
        // The payload may be empty (pruned): the external id is always the record's id.
        id: r.externalId,
        _nango_metadata: r.metadata,
      }),
    );
    return { records, next_cursor: page.next_cursor };
  }

  /**
   * The same page as `list`, as JSON bytes (`GET /records` passes them through the gateway untouched): no
   * record is parsed into objects and serialised again, which for a 1000-record page was most of the
   * CPU both services spent on it, nor decoded into text and encoded back (bench/README.md, Records). The
   * bytes are what `JSON.stringify` makes of `list`'s records, UTF-8, joined by commas (no brackets).
   */
  async listJson(scope: RecordScope, model: string, query: ListQuery): Promise<ListJsonResult> {
    const chunks: (Buffer | string)[] = [];
    const page = await this.page(scope, model, query, (r) => {
      if (chunks.length > 0) chunks.push(',');
      // The payload is a view of a buffer the next record reuses: its piece is kept as a copy.
      for (const piece of recordJson(r.payload, r.externalId, r.metadata))
        chunks.push(typeof piece === 'string' ? piece : Buffer.from(piece));
    });
    return { recordsJson: chunks, count: page.count, next_cursor: page.next_cursor };
  }

  /**
   * Copies a sealed payload out of node-postgres's receive buffer into one buffer reused for every record
   * (it is decrypted at once, synchronously), answering the copy: valid until the next call. Decrypting
   * straight from the receive buffer cost the service more CPU per page, most of it more garbage
   * collection (the views keep its socket chunks alive, we think); with the copy, no more than before the
   * payloads were bytea (bench/README.md, "Why the current settings").
   */
  private scratchCopy(bytes: Buffer): Buffer {
    if (bytes.length > this.scratch.length) this.scratch = Buffer.allocUnsafe(bytes.length * 2);
    bytes.copy(this.scratch);
    return this.scratch.subarray(0, bytes.length);
  }

  /**
   * A buffer for a plaintext of up to `bytes` (the sealed value's length bounds it), reused for every
   * record: the AES-GCM addon decrypts into it, so a page makes no buffer per record (`decryptBytes`).
   */
  private plainScratch(bytes: number): Buffer {
    if (bytes > this.plain.length) this.plain = Buffer.allocUnsafe(bytes * 2);
    return this.plain;
  }

  /**
   * Reads a page, giving each record to `emit` as its row arrives; answers how many there were and the
   * page's next cursor. A record's payload is valid only during its `emit` (the next record reuses its
   * buffer).
   */
  private async page(
    scope: RecordScope,
    model: string,
    query: ListQuery,
    emit: (record: PageRecord) => void,
  ): Promise<{ count: number; next_cursor: string | null }> {
    const ids = new RecordIds(scope, model);
    let cursor: DecodedCursor | undefined;
    if (query.cursor) {
      cursor = Cursor.decode(query.cursor);
      // A cursor is only ever one we gave out; anything else is the caller's mistake, not ours.
      if (!cursor) throw new OrchestratorError('invalid_cursor', 'The cursor is not one this API gave out');
    }
    // The rows come by binary COPY (`copyOut`: the payloads as their bytes, not hex), which takes no
    // parameters: every value is a literal escaped by the client (escapeLiteral) or an integer. Each row is
    // decrypted as it arrives.
    let count = 0;
    let lastCursor: string | undefined;
    let bytes = 0;
    let more = false;
    const client = await this.pool.connect();
    try {
      const lit = (value: string) => client.escapeLiteral(value);
      const conditions: string[] = [];
      if (cursor)
        conditions.push(`AND (updated_at, id) > (${lit(cursor.sort)}::timestamptz, ${lit(cursor.id)}::uuid)`);
      if (query.modifiedAfter) conditions.push(`AND updated_at >= ${lit(query.modifiedAfter)}::timestamptz`);
      if (query.externalIds) {
        const wanted = query.externalIds.map((e) => ids.of(externalIdOf(e)));
        conditions.push(`AND id = ANY(${lit(plainTextArray(wanted))}::uuid[])`);
      }
      conditions.push(filterCondition(query.filter));
      // Every column but payload and size_bytes as text (what the API prints), read in this order below.
      // ORDER BY names the table's columns: a bare `id` would be the output column `id::text`, which the
      // index cannot give in order, so every row of the model would be read and sorted for each page
      // instead of the first `limit` taken from records_page_idx.
      const sql = `COPY (SELECT id::text, external_id, payload, size_bytes,
          ${ts('created_at')}, ${ts('updated_at')}, ${ts('deleted_at')}, ${ts('pruned_at')},
          CASE WHEN deleted_at IS NOT NULL THEN 'DELETED' WHEN created_at = updated_at THEN 'ADDED' ELSE 'UPDATED' END
        FROM orchestrator.records
        WHERE environment_id = ${int(scope.environmentId)} AND provider_config_key = ${lit(scope.providerConfigKey)}
          AND connection_id = ${lit(scope.connectionId)} AND model = ${lit(model)}
          ${conditions.join(' ')}
        ORDER BY records.updated_at ASC, records.id ASC
        LIMIT ${int(query.limit + 1)}) TO STDOUT (FORMAT binary)`;
      await copyOut(client, sql, 9, (row) => {
        if (more) return;
        if (count === query.limit) {
          more = true;
          return;
        }
        const id = row.text()!;
        const externalId = row.text()!;
        const payload = row.bytes();
        const sizeBytes = row.int4()!;
        // Room for the metadata next to the payload; the budget keeps one reply within a NATS message.
        const size = sizeBytes + 300;
        if (query.maxBytes !== undefined && count > 0 && bytes + size > query.maxBytes) {
          more = true;
          return;
        }
        bytes += size;
        const firstSeen = row.text()!;
        const lastModified = row.text()!;
        const deletedAt = row.text();
        const prunedAt = row.text();
        const lastAction = row.text() as LastAction;
        count++;
        lastCursor = Cursor.encode(lastModified, id);
        emit({
          payload: payload
            ? this.cipher.decryptBytes(
                this.scratchCopy(payload),
                payloadAad(id),
                this.plainScratch(payload.length),
              )
            : null,
          externalId,
          // In the API's key order.
          metadata: {
            first_seen_at: firstSeen,
            last_modified_at: lastModified,
            last_action: lastAction,
            deleted_at: deletedAt,
            pruned_at: prunedAt,
            cursor: lastCursor,
          },
        });
      });
    } finally {
      client.release();
    }
    return { count, next_cursor: more && lastCursor ? lastCursor : null };
  }

  /**
   * `PATCH /records/prune`: empties the payload of up to `limit` records up to and including
   * `untilCursor` (their updated_at does not move, so cursors stay valid). `has_more` as Nango computes it.
   */
  async prune(
    scope: RecordScope,
    model: string,
    untilCursor: string,
    limit: number,
  ): Promise<{ count: number; has_more: boolean }> {
    const until = Cursor.decode(untilCursor);
    if (!until)
      throw new OrchestratorError('invalid_cursor', 'The until_cursor is not one this API gave out');
    let result = { count: 0, has_more: false };
    await this.transaction(async (tx) => {
      await this.lock(tx, scope, model);
      const {
        rows: [row],
      } = await tx.query<{ count: number; last: string | null }>(
        `WITH target AS (
          SELECT id FROM orchestrator.records
          WHERE environment_id = $1 AND provider_config_key = $2 AND connection_id = $3 AND model = $4
            AND pruned_at IS NULL AND (updated_at, id) <= ($5::timestamptz, $6::uuid)
          ORDER BY updated_at ASC, id ASC LIMIT $7
        ), pruned AS (
          UPDATE orchestrator.records r SET payload = NULL, pruned_at = now()
          FROM target WHERE r.id = target.id
          RETURNING r.id, r.updated_at
        )
        SELECT (SELECT count(*)::int FROM pruned) AS count,
          (SELECT ${ts('updated_at')} || '||' || id::text FROM pruned ORDER BY updated_at DESC, id DESC LIMIT 1) AS last`,
        [
          scope.environmentId,
          scope.providerConfigKey,
          scope.connectionId,
          model,
          until.sort,
          until.id,
          limit,
        ],
      );
      const count = row?.count ?? 0;
      const lastCursor = row?.last ? Buffer.from(row.last).toString('base64') : null;
      // As Nango: when the given cursor's record was not the last one pruned (it may have moved since),
      // more may remain; a caller asks once more and gets count 0.
      result = { count, has_more: count > 0 && lastCursor !== untilCursor };
    });
    return result;
  }

  // ---- internals ------------------------------------------------------------------------------------

  /**
   * BEGIN … COMMIT on one pooled connection; ROLLBACK (or, failing that, a dropped connection) on error.
   * `begin` is a statement sent with BEGIN, and `work` may answer one to send with COMMIT: each pair is
   * one simple-protocol query, one round trip instead of two (a batch's round trips were a visible
   * share of its time). A failing statement in such a pair stops the rest (COMMIT is not run): ROLLBACK.
   */
  private async transaction(
    work: (tx: TxClient) => Promise<void | { commitWith: string; committed: (rows: unknown[]) => void }>,
    begin?: (tx: TxClient) => string,
  ): Promise<void> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    try {
      await client.query(begin ? `BEGIN; ${begin(client)}` : 'BEGIN');
      const last = await work(client);
      if (last) {
        const results = (await client.query(`${last.commitWith}; COMMIT`)) as unknown as {
          rows: unknown[];
        }[];
        last.committed(results[0]!.rows);
      } else {
        await client.query('COMMIT');
      }
    } catch (error) {
      await client.query('ROLLBACK').catch((rollback: Error) => (broken = rollback));
      throw error;
    } finally {
      client.release(broken);
    }
  }

  private prepare(records: Record<string, unknown>[], ids: RecordIds) {
    const seen = new Set<string>();
    const unique: Incoming[] = [];
    const nonUniqueKeys: string[] = [];
    records.forEach((raw, index) => {
      const id = raw?.id;
      if (
        id === undefined ||
        id === null ||
        id === '' ||
        (typeof id !== 'string' && typeof id !== 'number')
      ) {
        throw new OrchestratorError(
          'invalid_body',
          `record ${index} has no "id" (a non-empty string or a number): every record needs one`,
        );
      }
      const externalId = externalIdOf(id);
      if (seen.has(externalId)) {
        nonUniqueKeys.push(externalId);
        return;
      }
      seen.add(externalId);
      // A record read back from the API carries _nango_metadata; it is not part of the record (copied
      // without it only then: a copy of every record is avoidable work).
      const record = Object.hasOwn(raw, '_nango_metadata') ? withoutMetadata(raw) : raw;
      unique.push({ id: ids.of(externalId), externalId, record });
    });
    return { unique, nonUniqueKeys: [...new Set(nonUniqueKeys)] };
  }

  private async lock(tx: Tx, scope: RecordScope, model: string): Promise<void> {
    await tx.query({ name: 'records_lock', text: SQL.lock, values: [modelLockKey(scope, model)] });
  }

  private async existing(
    tx: TxClient,
    chunk: Incoming[],
    cursor: DecodedCursor | undefined,
    withPayload: boolean,
    seen: { runId: string; model: string } | undefined,
  ): Promise<Map<string, Existing>> {
    const values: (string | null)[] = [
      plainTextArray(chunk.map((r) => r.id)),
      cursor?.sort ?? null,
      cursor?.id ?? null,
    ];
    if (seen) values.push(seen.runId, seen.model);
    const existing = new Map<string, Existing>();
    if (withPayload) {
      // batchUpdate merges into the payloads: by binary COPY, as a page (the bytes, not hex; no parameters).
      const text = SQL.existing(!!cursor, true, !!seen, (n) => {
        const value = values[n - 1];
        return value === null || value === undefined ? 'NULL' : tx.escapeLiteral(value);
      });
      await copyOut(tx, `COPY (${text}) TO STDOUT (FORMAT binary)`, 6, (row) => {
        const id = row.text()!;
        const entry = {
          id,
          data_hash: row.text()!,
          deleted: row.bool()!,
          pruned: row.bool()!,
          locked: row.bool()!,
        };
        const payload = row.bytes();
        // Copied: the row's bytes are node-postgres's receive buffer, reused once this returns.
        existing.set(id, { ...entry, payload: payload && Buffer.from(payload) });
      });
      return existing;
    }
    const { rows } = await tx.query<[string, string, boolean, boolean, boolean]>({
      name: `records_existing_${Number(!!cursor)}0${Number(!!seen)}`,
      text: SQL.existing(!!cursor, false, !!seen),
      values,
      rowMode: 'array',
    } as PgQueryConfig);
    for (const [id, hash, deleted, pruned, locked] of rows)
      existing.set(id, { id, data_hash: hash, deleted, pruned, locked, payload: null });
    return existing;
  }

  private async upsertChunk(
    tx: Tx,
    scope: RecordScope,
    model: string,
    chunk: Incoming[],
    existing: Map<string, Existing>,
    runId: string,
    op: 'save' | 'update',
    hashed: Hashed[] | undefined,
  ) {
    const counts = {
      added: 0,
      updated: 0,
      deleted: 0,
      unchanged: 0,
      maxTouched: undefined as string | undefined,
    };
    const writes: Write[] = [];
    // One data key for the chunk's payloads (each still bound to its row): half the AES work per record.
    let key: SharedDataKey | undefined;
    const toWrite = (incoming: Incoming, json: string, hash: string, touch: boolean): Write => ({
      id: incoming.id,
      externalId: incoming.externalId,
      hash,
      payload: (key ??= this.cipher.sharedKey()).sealBytes(json, payloadAad(incoming.id)),
      size: Buffer.byteLength(json),
      touch,
    });
    for (let i = 0; i < chunk.length; i++) {
      const incoming = chunk[i]!;
      const row = existing.get(incoming.id);
      if (op === 'update') {
        // batchUpdate changes records that exist (and are not deleted): the update is merged into them.
        if (!row || row.deleted || row.locked) {
          counts.unchanged++;
          continue;
        }
        const old = row.payload ? this.cipher.decryptJson<unknown>(row.payload, payloadAad(row.id)) : {};
        const json = JSON.stringify(mergeRecord(old, incoming.record));
        const hash = dataHash(json);
        if (hash === row.data_hash && !row.pruned) {
          counts.unchanged++;
          continue;
        }
        counts.updated++;
        writes.push(toWrite(incoming, json, hash, true));
        continue;
      }
      const { json, hash } = hashed?.[i] ?? hashRecord(incoming);
      if (!row) {
        counts.added++;
        writes.push(toWrite(incoming, json, hash, true));
      } else if (row.locked) {
        counts.unchanged++;
      } else if (row.deleted) {
        // Nango counts a record that comes back as added.
        counts.added++;
        writes.push(toWrite(incoming, json, hash, true));
      } else if (row.data_hash !== hash) {
        counts.updated++;
        writes.push(toWrite(incoming, json, hash, true));
      } else if (row.pruned) {
        // Same record again after its payload was pruned: the payload comes back, nothing changed for the customer.
        counts.unchanged++;
        writes.push(toWrite(incoming, json, hash, false));
      } else {
        counts.unchanged++;
      }
    }
    if (writes.length === 0) return counts;
    for (const w of writes)
      if (w.touch && (!counts.maxTouched || w.id > counts.maxTouched)) counts.maxTouched = w.id;

    await tx.query({
      name: 'records_upsert',
      text: SQL.upsert,
      values: [
        scope.environmentId,
        scope.providerConfigKey,
        scope.connectionId,
        model,
        runId,
        plainTextArray(writes.map((w) => w.id)),
        binaryTextArray(writes.map((w) => w.externalId)),
        binaryTextArray(writes.map((w) => w.hash)),
        binaryByteaArray(writes.map((w) => w.payload)),
        writes.map((w) => w.size),
        writes.map((w) => w.touch),
      ],
    });
    return counts;
  }

  private async deleteChunk(tx: Tx, chunk: Incoming[], existing: Map<string, Existing>, runId: string) {
    const counts = {
      added: 0,
      updated: 0,
      deleted: 0,
      unchanged: 0,
      maxTouched: undefined as string | undefined,
    };
    const ids: string[] = [];
    const deletedAt: (string | null)[] = [];
    for (const incoming of chunk) {
      const row = existing.get(incoming.id);
      // Deleting what does not exist or is already deleted changes nothing (and is not counted).
      if (!row || row.deleted || row.locked) {
        counts.unchanged++;
        continue;
      }
      counts.deleted++;
      ids.push(incoming.id);
      if (!counts.maxTouched || incoming.id > counts.maxTouched) counts.maxTouched = incoming.id;
      const given = incoming.record.deletedAt;
      const at = typeof given === 'string' || typeof given === 'number' ? new Date(given) : undefined;
      deletedAt.push(at && !Number.isNaN(at.getTime()) ? at.toISOString() : null);
    }
    if (ids.length === 0) return counts;
    await tx.query({ name: 'records_delete', text: SQL.delete, values: [runId, ids, deletedAt] });
    return counts;
  }

  /** Adds to the run's counts and the model's total; answers the transaction's now() as the API prints it. */
  private countStatement(
    tx: TxClient,
    scope: RecordScope,
    model: string,
    runId: string,
    c: ModelCounts,
  ): string {
    return SQL.count({
      runId: tx.escapeLiteral(runId),
      model: tx.escapeLiteral(model),
      added: int(c.added),
      updated: int(c.updated),
      deleted: int(c.deleted),
      environmentId: int(scope.environmentId),
      providerConfigKey: tx.escapeLiteral(scope.providerConfigKey),
      connectionId: tx.escapeLiteral(scope.connectionId),
    });
  }
}

/** The advisory lock's key of one (connection, model): writes, prunes and deletions of it take turns. */
const modelLockKey = (scope: RecordScope, model: string) =>
  JSON.stringify([scope.environmentId, scope.providerConfigKey, scope.connectionId, model]);
const lockKey = (tx: TxClient, scope: RecordScope, model: string) =>
  tx.escapeLiteral(modelLockKey(scope, model));

/** An integer spliced into a statement's text (never anything else). */
function int(value: number): number {
  if (!Number.isSafeInteger(value)) throw new Error(`not an integer: ${value}`);
  return value;
}

/**
 * A Postgres array literal of strings that need no escaping, joined directly: node-postgres's generic array
 * serialisation (two regex replaces per element) was the largest share of a write's CPU in this process.
 * Only for the uuids this file makes itself, which hold no quote, backslash or comma.
 */
function plainTextArray(values: string[]): string {
  return `{"${values.join('","')}"}`;
}

const withoutMetadata = ({ _nango_metadata: _ignored, ...record }: Record<string, unknown>) => record;

/** Nango's `filter`, quirks included: `updated,deleted` and `added,deleted` leave deleted records out. */
function filterCondition(filter: string | undefined): string {
  if (!filter) return '';
  const f = filter.toUpperCase();
  const added = f.includes('ADDED');
  const updated = f.includes('UPDATED');
  const deleted = f.includes('DELETED');
  if (added && updated) return `AND deleted_at IS NULL`;
  if (updated && deleted) return `AND deleted_at IS NULL AND created_at <> updated_at`;
  if (added && deleted) return `AND deleted_at IS NULL AND created_at = updated_at`;
  if (f === 'ADDED') return `AND deleted_at IS NULL AND created_at = updated_at`;
  if (f === 'UPDATED') return `AND deleted_at IS NULL AND created_at <> updated_at`;
  if (f === 'DELETED') return `AND deleted_at IS NOT NULL`;
  return '';
}
