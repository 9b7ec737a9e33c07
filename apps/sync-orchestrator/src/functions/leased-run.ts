import {
  FUNCTIONS_SUBJECTS,
  functionRunLeaseReplySchema,
  SwitchboardError,
  type FunctionRunCancel,
  type FunctionRunLease,
  type FunctionRunRequest,
  type FunctionRunResult,
  FUNCTIONS_REQUESTS,
} from '@switchboard/contracts';
import type { NatsRequester } from '@switchboard/messaging';
import type { NatsConnection } from 'nats';

/** How often a leased run's caller renews the lease (and heartbeats), at most. */
const RENEW_EVERY_MS = 2_000;

export interface LeasedRunOptions {
  nc: NatsConnection;
  nats: NatsRequester;
  /** The run request; its `lease.ttlMs` is how long the caller waits without a confirmation. */
  request: FunctionRunRequest & { lease: { ttlMs: number } };
  /** How long the run may take in all (the script's wall time and a margin for loading and answering). */
  timeoutMs: number;
  /** Called with each renewal (a Temporal activity's heartbeat). */
  heartbeat?: () => void;
  /**
   * Rejects when the caller gives up (a cancelled activity): renewals stop, so the script's lease runs
   * out; the caller stops the script itself when it wants that sooner.
   */
  cancelled?: Promise<never>;
}

/**
 * Sends `functions.v1.run` and waits for its answer while renewing the run's lease on functions-runtime
 * (`functions.v1.lease`, every 2 s or a third of the lease). The replica running the attempt answers each
 * renewal; when none has answered for the lease's length, that replica is gone (SIGKILLed, partitioned:
 * core NATS never answers a request whose responder died), so the wait ends at once with
 * `function_runtime_lost` and the attempt is told to stop, in case its replica is only cut off. Without
 * this the caller would wait out the run's whole time limit (15 min for an action, 24 h for a sync).
 *
 * One mechanism for every run the orchestrator starts: sync runs (whose worker's death the runtime notices
 * by the same lease running out), async actions and on-event scripts (Temporal activities), and
 * synchronous actions (the service itself waits).
 */
export async function runLeased(options: LeasedRunOptions): Promise<FunctionRunResult> {
  const { nc, nats, request, timeoutMs, heartbeat } = options;
  const ttlMs = request.lease.ttlMs;
  const every = Math.min(RENEW_EVERY_MS, Math.floor(ttlMs / 3));
  const lease = JSON.stringify({
    invocationId: request.invocationId,
    attempt: request.attempt,
  } satisfies FunctionRunLease);
  let confirmedAt = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const lost = new Promise<never>((_resolve, reject) => {
    timer = setInterval(() => {
      heartbeat?.();
      if (Date.now() - confirmedAt >= ttlMs) {
        clearInterval(timer);
        stopAttempt(nc, request, `its caller heard nothing from it for ${ttlMs} ms`);
        reject(
          new SwitchboardError(
            'function_runtime_lost',
            `The functions-runtime replica running ${request.invocationId} (attempt ${request.attempt}) ` +
              `stopped answering for ${ttlMs} ms: it is gone, the run was given up`,
          ),
        );
        return;
      }
      let pending;
      try {
        pending = nc.request(FUNCTIONS_SUBJECTS.lease, lease, { timeout: every });
      } catch {
        // A closed connection: nothing confirms, and the lease runs out on the runtime's side too.
        return;
      }
      pending.then(
        (msg) => {
          let reply: unknown;
          try {
            reply = msg.json();
          } catch {
            return;
          }
          if (functionRunLeaseReplySchema.safeParse(reply).success) confirmedAt = Date.now();
        },
        // No answer in time, or no replica listening at all: not confirmed.
        () => undefined,
      );
    }, every);
  });
  try {
    return await Promise.race([
      nats.call(FUNCTIONS_REQUESTS.run, request, { timeoutMs }),
      lost,
      ...(options.cancelled ? [options.cancelled] : []),
    ]);
  } finally {
    clearInterval(timer);
    // Settled by the run's answer or a cancellation: a loss found afterwards is nobody's to hear.
    lost.catch(() => undefined);
  }
}

/** Asks every functions-runtime replica to stop one attempt of a run. */
export function stopAttempt(
  nc: NatsConnection,
  run: { invocationId: string; attempt: number },
  reason: string,
): void {
  const cancel: FunctionRunCancel = {
    invocationId: run.invocationId,
    attempt: run.attempt,
    reason: reason.slice(0, 500),
  };
  try {
    nc.publish(FUNCTIONS_SUBJECTS.cancel, JSON.stringify(cancel));
  } catch {
    // A closed connection: the script's lease runs out instead.
  }
}
