import type { RecordScope } from './record-keys';
import type { ModelCounts, TxClient } from './records.types';

/** Prints a timestamptz as Postgres's to_json does in UTC (microseconds, `+00:00`), as Nango's API shows it. */
export const ts = (column: string) => `((to_json(${column} AT TIME ZONE 'UTC') #>> '{}') || '+00:00')`;

/** The statements of a write, prepared once per connection (named): parsed and planned once, not per batch. */
export const SQL = {
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

/** Adds to the run's counts and the model's total; answers the transaction's now() as the API prints it. */
export function countStatement(
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

/** The advisory lock's key of one (connection, model): writes, prunes and deletions of it take turns. */
export const modelLockKey = (scope: RecordScope, model: string) =>
  JSON.stringify([scope.environmentId, scope.providerConfigKey, scope.connectionId, model]);
export const lockKey = (tx: TxClient, scope: RecordScope, model: string) =>
  tx.escapeLiteral(modelLockKey(scope, model));

/** An integer spliced into a statement's text (never anything else). */
export function int(value: number): number {
  if (!Number.isSafeInteger(value)) throw new Error(`not an integer: ${value}`);
  return value;
}

/**
 * A Postgres array literal of strings that need no escaping, joined directly: node-postgres's generic array
 * serialisation (two regex replaces per element) was the largest share of a write's CPU in this process.
 * Only for the uuids this file makes itself, which hold no quote, backslash or comma.
 */
export function plainTextArray(values: string[]): string {
  return `{"${values.join('","')}"}`;
}

/** Nango's `filter`, quirks included: `updated,deleted` and `added,deleted` leave deleted records out. */
export function filterCondition(filter: string | undefined): string {
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
