// Runs inside Temporal's deterministic sandbox: import only @temporalio/workflow and types here.
import {
  ActivityFailure,
  allHandlersFinished,
  CancellationScope,
  condition,
  continueAsNew,
  defineSignal,
  getExternalWorkflowHandle,
  isCancellation,
  proxyActivities,
  setHandler,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { SyncActivities, SyncWorkflowInput } from '../activities/sync.activities';
import type { BegunSyncRun, SyncRunOutcome } from '../syncs/sync-runner';

const control = proxyActivities<SyncActivities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 20 },
});

/** What `POST /sync/trigger` (and `/sync/start` of a paused sync) asks of a sync. */
export interface SyncTrigger {
  /** A full resync: the run in progress is cancelled first. */
  reset: boolean;
}

/**
 * The one workflow id of a sync's API-triggered runs. The orchestrator signals-with-start it, so a trigger
 * while it waits for another run joins it, and one while it runs buffers one more run (never more).
 */
export const syncTriggerWorkflowIdOf = (syncId: string) => `sync-${syncId}-trigger`;

/** A trigger of the API (sent with the start of `sync-<id>-trigger`, or to the one already running). */
export const syncTriggerSignal = defineSignal<[SyncTrigger]>('syncTrigger');

/** A run of the sync closed: the triggered run waiting for it may go (sent by scheduled runs). */
export const syncRunEndedSignal = defineSignal('syncRunEnded');

/** Waiting for the running run: woken by its `syncRunEnded`, else looking again after this (doubling). */
const WAIT_FIRST_MS = 10_000;
const WAIT_MAX_MS = 5 * 60_000;

/**
 * One or more runs of a sync, three ways:
 * - started by its schedule: one run, skipped (`'skipped'`) while another run of the sync holds it;
 * - `triggered` (workflow id `sync-<id>-trigger`, started with the API's trigger signal): waits for the
 *   run holding the sync (a full resync cancels it first), runs, and runs once more if triggered again
 *   meanwhile; the trigger's trace context came with the start, so the run is in the request's trace;
 * - `webhook`: one run of the script's onWebhook handler, which holds nothing and may run beside another.
 *
 * Each run's id is drawn once (deterministically, so a replay keeps it) and is the invocation id of every
 * attempt of the script: records saved by an attempt that died count as seen by the attempt that resumes
 * from the checkpoint. What "holds the sync" means is `SyncRunner.begin`'s (the RUNNING run in Postgres).
 */
export async function syncWorkflow(input: SyncWorkflowInput): Promise<string> {
  if (input.triggered) return triggeredRuns(input);
  const runId = uuid4();
  const begun = await control.beginSyncRun({
    syncId: input.syncId,
    runId,
    workflowId: workflowInfo().workflowId,
    ...(input.webhook ? { webhook: true } : {}),
  });
  if (!begun || 'busy' in begun) return 'skipped';
  const payload = input.webhook ? { webhookPayload: input.webhook.payload } : {};
  try {
    return await runOnce({ ...begun, ...payload });
  } finally {
    // A triggered run may be waiting for this one (never for a webhook run, which holds nothing).
    if (!input.webhook) await CancellationScope.nonCancellable(() => announceEnd(input.syncId));
  }
}

/** The runs of `sync-<id>-trigger`: one per batch of triggers, one after the other. */
async function triggeredRuns(input: SyncWorkflowInput): Promise<string> {
  const root = CancellationScope.current();
  // A continued execution carries the triggers its predecessor had not served.
  let requested = input.pendingTriggers ?? 0;
  let served = 0;
  // `requested` when the latest full resync came: one is pending while it is above `served`.
  let resetAt = input.pendingReset ? requested : 0;
  let ended = false;
  let running: CancellationScope | undefined;
  setHandler(syncTriggerSignal, async (trigger) => {
    requested += 1;
    if (!trigger.reset) return;
    resetAt = requested;
    // A full resync stops the run in progress (the loop below then runs again, honouring the reset),
    // unless that run is the full resync: it began after the request was stored, and took it.
    const current = running;
    if (current && (await control.syncResetPending({ syncId: input.syncId }))) current.cancel();
  });
  setHandler(syncRunEndedSignal, () => {
    ended = true;
  });

  let status = 'skipped';
  let runs = 0;
  let waitMs = WAIT_FIRST_MS;
  let cancelledHolder: string | undefined;
  while (served < requested) {
    if (runs > 0 && workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof syncWorkflow>({
        syncId: input.syncId,
        triggered: true,
        pendingTriggers: requested - served,
        pendingReset: resetAt > served,
      });
    }
    // Triggers that came before this attempt are served by its run; those after it, by the next one.
    const wanted = requested;
    ended = false;
    const runId = uuid4();
    const begun = await control.beginSyncRun({
      syncId: input.syncId,
      runId,
      workflowId: workflowInfo().workflowId,
    });
    if (!begun) break; // the sync (or its function) is gone
    if ('busy' in begun) {
      if (resetAt > served && cancelledHolder !== begun.busy.workflowId) {
        cancelledHolder = begun.busy.workflowId;
        await control.cancelSyncRunHolder(begun.busy);
      }
      await condition(() => ended, waitMs);
      waitMs = Math.min(waitMs * 2, WAIT_MAX_MS);
      continue;
    }
    served = wanted;
    waitMs = WAIT_FIRST_MS;
    cancelledHolder = undefined;
    runs += 1;
    const scope = new CancellationScope();
    running = scope;
    // A full resync that came while this run began, and that it did not take: it does not run at all.
    if (resetAt > wanted && (await control.syncResetPending({ syncId: input.syncId }))) scope.cancel();
    try {
      status = await runOnce(begun, scope);
    } catch (error) {
      // Cancelled by a full resync (only `scope` was): closed as cancelled, and the loop goes on.
      if (!isCancellation(error) || root.consideredCancelled) throw error;
      status = 'cancelled';
    } finally {
      running = undefined;
    }
  }
  // A trigger's handler may still be asking whether its reset is pending; nothing is left to cancel.
  await condition(allHandlersFinished);
  return status;
}

/**
 * Runs the script of a begun run and closes the run with its outcome. A cancellation (a full resync
 * cancelling this workflow, or `scope`) closes the run as cancelled and is thrown on.
 */
async function runOnce(begun: BegunSyncRun, scope?: CancellationScope): Promise<string> {
  const { runSyncScript } = proxyActivities<SyncActivities>({
    startToCloseTimeout: begun.timeoutMs + 60_000,
    heartbeatTimeout: begun.heartbeatTimeoutMs,
    // Retried when the worker or the runtime went away, not when the script failed (that is an outcome).
    retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumAttempts: 4 },
  });
  let outcome: SyncRunOutcome;
  try {
    outcome = await (scope ? scope.run(() => runSyncScript(begun)) : runSyncScript(begun));
  } catch (error) {
    if (isCancellation(error)) {
      await CancellationScope.nonCancellable(() =>
        control.finishSyncRun({ runId: begun.runId, outcome: { status: 'cancelled' } }),
      );
      throw error;
    }
    const cause = error instanceof ActivityFailure && error.cause ? error.cause : error;
    outcome = {
      status: 'failed',
      error: { type: 'script_error', description: (cause as Error).message || 'The sync run failed' },
    };
  }
  // Not cancellable once the script is over: the run is closed whatever comes.
  await CancellationScope.nonCancellable(() => control.finishSyncRun({ runId: begun.runId, outcome }));
  return outcome.status;
}

/** Tells the sync's triggered workflow, if one is waiting, that the sync is free. */
async function announceEnd(syncId: string): Promise<void> {
  try {
    await getExternalWorkflowHandle(syncTriggerWorkflowIdOf(syncId)).signal(syncRunEndedSignal);
  } catch {
    // No triggered run of this sync: nobody waits.
  }
}
