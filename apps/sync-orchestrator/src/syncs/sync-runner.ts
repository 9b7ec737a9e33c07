import { WorkflowNotFoundError } from '@temporalio/client';
import { BeginSyncRun, type BeginSyncRunInput } from './runs/begin-sync-run';
import { ExecuteSyncRun } from './runs/execute-sync-run';
import { FinishSyncRun } from './runs/finish-sync-run';
import {
  SYNC_RUN_STATUS,
  type BegunSyncRun,
  type SyncBusy,
  type SyncRunHolder,
  type SyncRunOutcome,
  type SyncRunnerDeps,
} from './runs/sync-run';

export {
  SYNC_RUN_STATUS,
  workflowRunning,
  type BegunSyncRun,
  type SyncBusy,
  type SyncRunHolder,
  type SyncRunOutcome,
  type SyncRunType,
  type SyncRunnerDeps,
} from './runs/sync-run';

/**
 * One sync run, step by step, for the worker's activities: `begin` records it (and honours a pending
 * reset), `execute` asks functions-runtime to run the script (pinned version, the run id as invocation
 * id on every attempt), `finish` applies track_deletes, records the counts and publishes the events the
 * relay turns into `sync` webhooks. Each step may be retried by Temporal and is idempotent.
 *
 * Runs of one sync never overlap, whoever started them (its schedule, or the API's `sync-<id>-trigger`
 * workflow, which the schedule knows nothing of): the RUNNING scheduled or triggered run holds the sync
 * until `finish` closes it, and `begin` answers `busy` to any other (the schedule's run is then skipped,
 * the triggered one waits). Webhook runs hold nothing and may run beside them, as in Nango.
 */
export class SyncRunner {
  private readonly beginRun: BeginSyncRun;
  private readonly executeRun: ExecuteSyncRun;
  private readonly finishRun: FinishSyncRun;

  constructor(private readonly deps: SyncRunnerDeps) {
    this.beginRun = new BeginSyncRun(deps);
    this.executeRun = new ExecuteSyncRun(deps);
    this.finishRun = new FinishSyncRun(deps);
  }

  /** Records the run (`runs/begin-sync-run.ts`): `busy` while another run holds the sync, null when gone. */
  begin(input: BeginSyncRunInput): Promise<BegunSyncRun | SyncBusy | null> {
    return this.beginRun.execute(input);
  }

  /** Runs the script once on functions-runtime (`runs/execute-sync-run.ts`). */
  execute(
    begun: BegunSyncRun,
    attempt: number,
    heartbeat: () => void,
    cancelled: Promise<never>,
  ): Promise<SyncRunOutcome> {
    return this.executeRun.execute(begun, attempt, heartbeat, cancelled);
  }

  /** Closes the run: counts, track_deletes, the sync's state, and the `events.v1.sync` events. */
  finish(runId: string, outcome: SyncRunOutcome): Promise<void> {
    return this.finishRun.execute(runId, outcome);
  }

  /** Whether a full resync was asked for and no run took it yet (`begin` clears it as it takes it). */
  async resetPending(syncId: string): Promise<boolean> {
    const sync = await this.deps.db.sync.findUnique({
      where: { id: syncId },
      select: { resetPending: true },
    });
    return sync?.resetPending ?? false;
  }

  /**
   * A full resync asks the run holding the sync to stop (its workflow closes it as cancelled), unless the
   * reset was taken since it was asked for: then the holder is the full resync (its `begin` took it).
   */
  async cancelHolder(holder: SyncRunHolder): Promise<void> {
    const run = await this.deps.db.syncRun.findUnique({
      where: { id: holder.runId },
      include: { sync: { select: { resetPending: true } } },
    });
    if (run?.status !== SYNC_RUN_STATUS.running || !run.sync.resetPending) return;
    try {
      await this.deps.workflows.getHandle(holder.workflowId).cancel();
    } catch (error) {
      // Already over: nothing to cancel.
      if (!(error instanceof WorkflowNotFoundError)) throw error;
    }
  }
}
