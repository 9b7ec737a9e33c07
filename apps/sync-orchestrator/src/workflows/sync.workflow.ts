// Runs inside Temporal's deterministic sandbox: import only @temporalio/workflow and types here.
import {
  ActivityFailure,
  CancellationScope,
  isCancellation,
  proxyActivities,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { SyncActivities, SyncWorkflowInput } from '../activities/sync.activities';
import type { SyncRunOutcome } from '../syncs/sync-runner';

const control = proxyActivities<SyncActivities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 20 },
});

/**
 * One run of a sync, started by its schedule (or a trigger). The run id is drawn once (deterministically,
 * so a replay keeps it) and is the invocation id of every attempt of the script: records saved by an
 * attempt that died count as seen by the attempt that resumes from the checkpoint.
 */
export async function syncWorkflow(input: SyncWorkflowInput): Promise<string> {
  const runId = uuid4();
  const begun = await control.beginSyncRun({
    syncId: input.syncId,
    runId,
    workflowId: workflowInfo().workflowId,
    ...(input.webhook ? { webhook: true } : {}),
  });
  if (!begun) return 'skipped';
  const { runSyncScript } = proxyActivities<SyncActivities>({
    startToCloseTimeout: begun.timeoutMs + 60_000,
    heartbeatTimeout: begun.heartbeatTimeoutMs,
    // Retried when the worker or the runtime went away, not when the script failed (that is an outcome).
    retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumAttempts: 4 },
  });
  let outcome: SyncRunOutcome;
  try {
    outcome = await runSyncScript(
      input.webhook ? { ...begun, webhookPayload: input.webhook.payload } : begun,
    );
  } catch (error) {
    if (isCancellation(error)) {
      await CancellationScope.nonCancellable(() =>
        control.finishSyncRun({ runId, outcome: { status: 'cancelled' } }),
      );
      throw error;
    }
    const cause = error instanceof ActivityFailure && error.cause ? error.cause : error;
    outcome = {
      status: 'failed',
      error: { type: 'script_error', description: (cause as Error).message || 'The sync run failed' },
    };
  }
  await control.finishSyncRun({ runId, outcome });
  return outcome.status;
}
