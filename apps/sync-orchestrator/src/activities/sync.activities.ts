import { Context } from '@temporalio/activity';
import type { BegunSyncRun, SyncBusy, SyncRunHolder, SyncRunner, SyncRunOutcome } from '../syncs/sync-runner';

/** What a sync schedule starts: the sync row; everything else is read when the run begins. */
export interface SyncWorkflowInput {
  syncId: string;
  /**
   * Runs asked for through the API (`sync-<id>-trigger`, started with its first trigger signal): they wait
   * for a run in progress instead of being skipped.
   */
  triggered?: boolean;
  /** A continued `sync-<id>-trigger`: the triggers (and whether a full resync) its predecessor left to serve. */
  pendingTriggers?: number;
  pendingReset?: boolean;
  /**
   * A run of the script's onWebhook handler (started by a provider webhook, not the schedule): the
   * provider's parsed payload, which the workflow's history keeps.
   */
  webhook?: { payload: unknown };
}

/** Activities of sync runs, built once by the worker with its Postgres, NATS and records store. */
export function createSyncActivities(runner: SyncRunner) {
  return {
    /**
     * Records the run, which then holds the sync (null: the sync or its function is gone, nothing to run;
     * `busy`: another run of the sync holds it).
     */
    beginSyncRun(input: Parameters<SyncRunner['begin']>[0]): Promise<BegunSyncRun | SyncBusy | null> {
      return runner.begin(input);
    },

    /**
     * A full resync: the run holding the sync is cancelled (its workflow closes it as cancelled), unless
     * it took the reset itself.
     */
    cancelSyncRunHolder(holder: SyncRunHolder): Promise<void> {
      return runner.cancelHolder(holder);
    },

    /** Whether a full resync is still to be taken by a run (none began since it was asked for). */
    syncResetPending(input: { syncId: string }): Promise<boolean> {
      return runner.resetPending(input.syncId);
    },

    /**
     * The script's run on functions-runtime, heartbeating meanwhile: if this worker dies, Temporal notices
     * within the heartbeat timeout and another worker tries again with the same run id.
     */
    async runSyncScript(begun: BegunSyncRun): Promise<SyncRunOutcome> {
      const context = Context.current();
      const cancelled = context.cancelled;
      // Temporal rejects `cancelled` when the run is cancelled (a full resync); it must not go unhandled otherwise.
      cancelled.catch(() => undefined);
      return runner.execute(begun, context.info.attempt, () => context.heartbeat(), cancelled);
    },

    finishSyncRun(input: { runId: string; outcome: SyncRunOutcome }): Promise<void> {
      return runner.finish(input.runId, input.outcome);
    },
  };
}

export type SyncActivities = ReturnType<typeof createSyncActivities>;
