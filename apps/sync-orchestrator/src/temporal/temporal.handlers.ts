import { randomUUID } from 'node:crypto';
import { Controller, Inject } from '@nestjs/common';
import { ORCHESTRATOR_SUBJECTS, pingRunSchema, type PingResult, type PingRun } from '@switchboard/contracts';
import { NatsHandler } from '@switchboard/messaging';
import {
  Client,
  isGrpcServiceError,
  ServiceError,
  TimeoutFailure,
  WorkflowFailedError,
} from '@temporalio/client';
import { ORCHESTRATOR_ENV, type OrchestratorEnv } from '../config/env';
import { OrchestratorError } from '../sync-orchestrator.errors';
import { pingWorkflow } from '../workflows';

/** How long starting a workflow may take before Temporal counts as unavailable. */
const START_DEADLINE_MS = 5_000;

@Controller()
export class TemporalHandlers {
  constructor(
    private readonly client: Client,
    @Inject(ORCHESTRATOR_ENV) private readonly env: OrchestratorEnv,
  ) {}

  /** Runs the ping workflow end to end: proves Temporal and a worker on the task queue are both up. */
  @NatsHandler(ORCHESTRATOR_SUBJECTS.pingRun, pingRunSchema)
  async runPing(input: PingRun): Promise<PingResult> {
    const workflowId = `ping-${randomUUID()}`;
    try {
      // The SDK retries an unreachable server for ~15 s; a caller on NATS gives up well before that.
      const handle = await this.client.connection.withDeadline(Date.now() + START_DEADLINE_MS, () =>
        this.client.workflow.start(pingWorkflow, {
          taskQueue: this.env.TEMPORAL_TASK_QUEUE,
          workflowId,
          args: [input],
          // Without a worker nothing would ever close it; a ping that old has no caller left anyway.
          workflowExecutionTimeout: '1 minute',
        }),
      );
      return { greeting: await handle.result(), workflowId };
    } catch (error) {
      throw toOrchestratorError(error);
    }
  }
}

function toOrchestratorError(error: unknown): unknown {
  if (error instanceof WorkflowFailedError && error.cause instanceof TimeoutFailure) {
    return new OrchestratorError('gateway_timeout', 'no worker ran the ping workflow in time');
  }
  if (error instanceof ServiceError || isGrpcServiceError(error)) {
    return new OrchestratorError('service_unavailable', 'Temporal is not reachable');
  }
  return error;
}
