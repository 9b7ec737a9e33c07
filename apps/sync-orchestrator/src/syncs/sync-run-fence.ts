import type { PgPoolClient, Prisma } from '@switchboard/db';
import { OrchestratorError } from '../sync-orchestrator.errors';

/** The sync run (and attempt) a script's write is made for, as functions-runtime names it. */
export interface SyncRunWriter {
  runId: string;
  /** Absent from a runtime older than the fence: only the run is checked then. */
  attempt?: number | undefined;
}

/**
 * A transaction the fence runs in: a Prisma interactive transaction (checkpoints) or a node-postgres
 * client inside BEGIN (the records store).
 */
export type FenceTx = Pick<Prisma.TransactionClient, '$queryRawUnsafe'> | Pick<PgPoolClient, 'query'>;

/**
 * What the write is for, from its request: the run must be a run of a sync of this connection (and of this
 * variant, and of this sync where the write names it), so a run id cannot carry writes to another scope.
 */
export interface SyncRunScope {
  environmentId: number;
  providerConfigKey: string;
  connectionId: string;
  variant: string;
  /** A checkpoint names its sync (the function); a records write names a model only. */
  syncName?: string;
}

interface RunRow {
  status: string;
  attempts: number;
  environment_id: number;
  provider_config_key: string;
  connection_id: string;
  name: string;
  variant: string;
}

const FENCE_SQL = `
  SELECT r.status, r.attempts, s.environment_id, s.provider_config_key, s.connection_id, s.name, s.variant
  FROM orchestrator.sync_runs r JOIN orchestrator.syncs s ON s.id = r.sync_id
  WHERE r.id = $1::uuid FOR SHARE OF r`;

/**
 * Fences a sync script's write (records, unseen deletes, checkpoint): inside the write's transaction, the
 * run must be a run of the sync the write is for (`scope`, else `forbidden`), still RUNNING, and the write
 * must come from its latest attempt, else `sync_run_superseded`; either way nothing is written. The run's
 * row is read `FOR SHARE`, so closing the run (finish, or the next run's `begin` closing it as abandoned)
 * waits for writes already let through, and every write after the close is refused: the next run never
 * sees a record, a deletion or a checkpoint of the old script.
 *
 * A scheduled or triggered run is RUNNING only while it holds its sync (a full resync closes it before the
 * next run begins); an onWebhook run while its workflow runs it, as before.
 */
export async function holdSyncRun(tx: FenceTx, writer: SyncRunWriter, scope: SyncRunScope): Promise<void> {
  const [run] =
    '$queryRawUnsafe' in tx
      ? await tx.$queryRawUnsafe<RunRow[]>(FENCE_SQL, writer.runId)
      : (await tx.query<RunRow>({ name: 'sync_run_fence', text: FENCE_SQL, values: [writer.runId] })).rows;
  if (
    run &&
    (run.environment_id !== scope.environmentId ||
      run.provider_config_key !== scope.providerConfigKey ||
      run.connection_id !== scope.connectionId ||
      run.variant !== scope.variant ||
      (scope.syncName !== undefined && run.name !== scope.syncName))
  ) {
    // Named without the details: the caller is told only that this run does not cover the write.
    throw new OrchestratorError(
      'forbidden',
      `sync run ${writer.runId} is not a run of the sync this write is for`,
    );
  }
  if (!run || run.status !== 'RUNNING') {
    throw new OrchestratorError(
      'sync_run_superseded',
      `sync run ${writer.runId} is over (cancelled, abandoned or finished): its script may write no more`,
    );
  }
  if (writer.attempt !== undefined && writer.attempt < run.attempts) {
    throw new OrchestratorError(
      'sync_run_superseded',
      `attempt ${writer.attempt} of sync run ${writer.runId} was retried (attempt ${run.attempts} runs): it may write no more`,
    );
  }
}
