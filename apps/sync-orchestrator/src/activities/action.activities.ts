import { EVENT_SUBJECTS, type AsyncActionEvent, type Caller, type OnEventType } from '@switchboard/contracts';
import { publishEvent } from '@switchboard/messaging';
import { Context } from '@temporalio/activity';
import type { NatsConnection } from 'nats';
import type { AttemptOutcome, FunctionInvocationRunner } from '../functions/function-invocation-runner';
import { stopAttempt } from '../functions/leased-run';

/** What an async action's or on-event script's workflow carries (Temporal stores it in its history). */
export interface InvocationWorkflowInput {
  invocationId: string;
  caller: Caller;
  provider: string;
  connectionId: string;
  providerConfigKey: string;
  input?: unknown;
  event?: OnEventType;
  maxRetries: number;
  wallTimeMs: number;
  depth?: number;
  /** Async actions tell the customer when they are done (`async_action` webhook). */
  notify: boolean;
  /**
   * The attempt activity's heartbeat timeout (SWITCHBOARD_ACTION_HEARTBEAT_TIMEOUT_MS when started): a
   * worker silent this long has the attempt run again by another one. Absent in runs started before it.
   */
  heartbeatTimeoutMs?: number;
}

export interface ActionActivityDeps {
  runner: FunctionInvocationRunner;
  nc: NatsConnection;
}

/**
 * Activities of async actions and on-event scripts. Built with the worker's connections (Postgres,
 * NATS), so the worker process constructs them once and registers them with the sync activities.
 */
export function createActionActivities(deps: ActionActivityDeps) {
  return {
    /** One attempt on functions-runtime, recorded; the workflow decides whether to try again. */
    async runInvocationAttempt(
      input: InvocationWorkflowInput & { attempt: number; final: boolean },
    ): Promise<{ status: AttemptOutcome['status']; retryable: boolean }> {
      const context = Context.current();
      // Run again by Temporal: the worker of the previous try died (its heartbeats stopped). Its script may
      // still run on functions-runtime under the same invocation and attempt, whose lease this try renews:
      // it is stopped first, so the action does not run twice at once.
      if (context.info.attempt > 1)
        stopAttempt(deps.nc, input, 'the worker waiting for this attempt died; it is being run again');
      const outcome = await deps.runner.attempt({
        heartbeat: () => context.heartbeat(),
        invocationId: input.invocationId,
        caller: input.caller,
        provider: input.provider,
        attempt: input.attempt,
        ...(input.input !== undefined ? { input: input.input } : {}),
        ...(input.event ? { event: input.event } : {}),
        wallTimeMs: input.wallTimeMs,
        ...(input.depth !== undefined ? { depth: input.depth } : {}),
        final: input.final,
      });
      return {
        status: outcome.status,
        retryable: outcome.status === 'failed' && outcome.retryable,
      };
    },

    /** `events.v1.async-action`, which webhook-relay turns into the signed `async_action` webhook. */
    async publishAsyncActionEvent(input: InvocationWorkflowInput): Promise<void> {
      const event: AsyncActionEvent = {
        id: `async-action-${input.invocationId}`,
        environmentId: input.caller.environmentId,
        connectionId: input.connectionId,
        providerConfigKey: input.providerConfigKey,
        actionId: input.invocationId,
      };
      await publishEvent(deps.nc, EVENT_SUBJECTS.asyncAction, event.id, event);
    },
  };
}

export type ActionActivities = ReturnType<typeof createActionActivities>;
