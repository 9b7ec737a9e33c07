import { EnvelopeCipher, type MasterKeyring } from '@switchboard/crypto';
import type { PgPool } from '@switchboard/db';
import { Cursor, type RecordScope } from './record-keys';
import { RecordDeletion } from './record-deletion';
import { RecordsReader } from './records-reader';
import { RecordsStoreError } from './records-store.errors';
import { lockModel, transaction } from './records-transaction';
import { RecordsWriter } from './records-writer';
import { ts } from './records.sql';
import type {
  ListJsonResult,
  ListQuery,
  ListResult,
  MergingStrategy,
  ModelCounts,
  WriteFence,
  WriteOp,
  WriteResult,
} from './records.types';

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
  private readonly writer: RecordsWriter;
  private readonly reader: RecordsReader;
  private readonly deletion: RecordDeletion;

  constructor(
    private readonly pool: PgPool,
    keyring: MasterKeyring,
  ) {
    const cipher = new EnvelopeCipher(keyring);
    this.writer = new RecordsWriter(pool, cipher);
    this.reader = new RecordsReader(pool, cipher);
    this.deletion = new RecordDeletion(pool);
  }

  /** batchSave / batchUpdate / batchDelete of one run; `model` is the full model key (`Model::variant` when not base). */
  write(
    scope: RecordScope,
    model: string,
    records: Record<string, unknown>[],
    op: WriteOp,
    runId: string,
    options: { merging?: MergingStrategy; fence?: WriteFence } = {},
  ): Promise<WriteResult> {
    return this.writer.write(scope, model, records, op, runId, options);
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
  deleteRecords(scope: RecordScope, models: string[]): Promise<number> {
    return this.deletion.deleteRecords(scope, models);
  }

  /** Hard-deletes every record of a connection, all models (the connection was deleted). */
  deleteAllRecords(scope: RecordScope): Promise<number> {
    return this.deletion.deleteAllRecords(scope);
  }

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
  /**
   * Track deletes: soft-deletes every record of the model that this run did not save (in any of its
   * attempts: the run id is the generation). Counted in the run's `deleted`.
   */
  deleteUnseen(scope: RecordScope, model: string, runId: string): Promise<number> {
    return this.deletion.deleteUnseen(scope, model, runId);
  }

  /**
   * `trackDeletesStart`: opens the model's deletion window with this run, or adds the run to the window
   * an earlier run opened and did not close. Idempotent within a run.
   */
  openDeleteWindow(scope: RecordScope, model: string, runId: string, fence?: WriteFence): Promise<void> {
    return this.deletion.openDeleteWindow(scope, model, runId, fence);
  }

  /** Drops the models' open deletion windows and what their runs saw (a full resync starts over). */
  closeDeleteWindows(scope: RecordScope, models: string[]): Promise<void> {
    return this.deletion.closeDeleteWindows(scope, models);
  }

  /**
   * `deleteUnseen`, also answering (up to `maxKeys` of) the external ids it deleted, as Nango's SDK does.
   * With `window` (`trackDeletesEnd`), the model's open deletion window closes.
   */
  deleteUnseenKeys(
    scope: RecordScope,
    model: string,
    runId: string,
    maxKeys: number,
    fence?: WriteFence,
    window = false,
  ): Promise<{ deleted: number; deletedKeys: string[] }> {
    return this.deletion.deleteUnseenKeys(scope, model, runId, maxKeys, fence, window);
  }

  /** Forgets which records a run saw once it is over (its counts stay), unless a deletion window holds it. */
  forgetRun(runId: string): Promise<void> {
    return this.deletion.forgetRun(runId);
  }

  /** Drops what runs started before `before` saw (a backstop for runs whose end was never recorded). */
  pruneSeen(before: Date): Promise<number> {
    return this.deletion.pruneSeen(before);
  }

  /** The cursor of the most recently modified record of the model (`setMergingStrategy`'s starting point). */
  lastCursor(scope: RecordScope, model: string): Promise<string | null> {
    return this.reader.lastCursor(scope, model);
  }

  /**
   * A page of records, Nango's `GET /records`: ordered by (updated_at, id), `next_cursor` set when more
   * exist. Throws `invalid_cursor` (Nango answers it as a server error) for a cursor it cannot read.
   */
  list(scope: RecordScope, model: string, query: ListQuery): Promise<ListResult> {
    return this.reader.list(scope, model, query);
  }

  /** The same page as `list`, as JSON bytes (`GET /records` passes them through the gateway untouched). */
  listJson(scope: RecordScope, model: string, query: ListQuery): Promise<ListJsonResult> {
    return this.reader.listJson(scope, model, query);
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
      throw new RecordsStoreError('invalid_cursor', 'The until_cursor is not one this API gave out');
    let result = { count: 0, has_more: false };
    await transaction(this.pool, async (tx) => {
      await lockModel(tx, scope, model);
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
}
