// Runs inside Temporal's deterministic sandbox: import only @temporalio/workflow and types here.
import { proxyActivities, sleep } from '@temporalio/workflow';
import type { ActionActivities, InvocationWorkflowInput } from '../activities/action.activities';

/**
 * An async action or on-event script: up to `maxRetries + 1` attempts on functions-runtime with a
 * growing pause between them, then (async actions) the event that becomes the customer's webhook.
 * Each attempt is one activity; the activity itself is retried by Temporal only when the worker or
 * Postgres failed under it (a script failure is an answer, not an activity failure). A functions-runtime
 * replica lost under an attempt is an answer too (`function_runtime_lost`, retryable): the next attempt,
 * if `maxRetries` allows one, runs on another replica.
 */
export async function invocationWorkflow(input: InvocationWorkflowInput): Promise<string> {
  const { runInvocationAttempt, publishAsyncActionEvent } = proxyActivities<ActionActivities>({
    startToCloseTimeout: input.wallTimeMs + 30_000,
    // The attempt heartbeats while its script's lease is renewed: a dead worker is noticed this soon.
    ...(input.heartbeatTimeoutMs ? { heartbeatTimeout: input.heartbeatTimeoutMs } : {}),
    retry: { maximumAttempts: 5, initialInterval: '1 second' },
  });
  const attempts = input.maxRetries + 1;
  let status = 'failed';
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const final = attempt === attempts;
    const outcome = await runInvocationAttempt({ ...input, attempt, final });
    status = outcome.status;
    if (outcome.status === 'succeeded' || !outcome.retryable || final) break;
    await sleep(Math.min(60_000, 1000 * 2 ** (attempt - 1)));
  }
  if (input.notify) await publishAsyncActionEvent(input);
  return status;
}

export { syncWorkflow } from './sync.workflow';
