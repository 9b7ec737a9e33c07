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
export type FenceTx = Pick<Prisma.TransactionClient, '$queryRaw'> | Pick<PgPoolClient, 'query'>;

interface RunRow {
  status: string;
  attempts: number;
}

const FENCE_SQL = 'SELECT status, attempts FROM orchestrator.sync_runs WHERE id = $1::uuid FOR SHARE';

/**
 * Fences a sync script's write (records, unseen deletes, checkpoint): inside the write's transaction, the
 * run must still be RUNNING and the write must come from its latest attempt, else `sync_run_superseded`
 * and nothing is written. The run's row is read `FOR SHARE`, so closing the run (finish, or the next
 * run's `begin` closing it as abandoned) waits for writes already let through, and every write after
 * the close is refused: the next run never sees a record, a deletion or a checkpoint of the old script.
 *
 * A scheduled or triggered run is RUNNING only while it holds its sync (a full resync closes it before the
 * next run begins); an onWebhook run while its workflow runs it, as before.
 */
export async function holdSyncRun(tx: FenceTx, writer: SyncRunWriter): Promise<void> {
  const [run] =
    '$queryRaw' in tx
      ? await tx.$queryRaw<RunRow[]>`
          SELECT status, attempts FROM orchestrator.sync_runs WHERE id = ${writer.runId}::uuid FOR SHARE`
      : (await tx.query<RunRow>({ name: 'sync_run_fence', text: FENCE_SQL, values: [writer.runId] })).rows;
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
