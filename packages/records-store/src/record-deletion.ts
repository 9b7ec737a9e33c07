import type { PgPool } from '@switchboard/db';
import type { RecordScope } from './record-keys';
import { lockModel, transaction } from './records-transaction';
import { countStatement } from './records.sql';
import type { Tx, WriteFence } from './records.types';

/**
 * Deletions in the records store: hard deletes of models and connections, track-deletes (soft-deleting
 * what a run, or every run of a deletion window, did not see), and forgetting what finished runs saw.
 */
export class RecordDeletion {
  constructor(private readonly pool: PgPool) {}

  /** Hard-deletes every record of these models (emptyCache, a full resync clearing the cache, a deleted sync). */
  async deleteRecords(scope: RecordScope, models: string[]): Promise<number> {
    let total = 0;
    const sorted = [...new Set(models)].sort();
    if (sorted.length === 0) return 0;
    const values = [scope.environmentId, scope.providerConfigKey, scope.connectionId, sorted];
    await transaction(this.pool, async (tx) => {
      // Always in the same order, so two deletions of overlapping model sets cannot deadlock.
      for (const model of sorted) await lockModel(tx, scope, model);
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
    await transaction(this.pool, async (tx) => {
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
    await transaction(this.pool, async (tx) => {
      await fence?.(tx);
      await lockModel(tx, scope, model);
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
        commitWith: countStatement(tx, scope, model, runId, { added: 0, updated: 0, deleted }),
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
}
