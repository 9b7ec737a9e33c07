import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import {
  SwitchboardError,
  type ActionTriggerRequest,
  type Caller,
  type OnEventType,
  type RunLogsResponse,
} from '@switchboard/contracts';
import { Prisma, type OrchestratorDb } from '@switchboard/db';
import { Client } from '@temporalio/client';
import { NATS_CONNECTION } from '@switchboard/messaging';
import type { NatsConnection } from 'nats';
import type { InvocationWorkflowInput } from '../activities/action.activities';
import { ORCHESTRATOR_ENV, type OrchestratorEnv } from '../config/env';
import { KnownConnections } from '../connections/known-connections';
import { ORCHESTRATOR_DB } from '../database/database.module';
import { WITH_VERSION, type FunctionWithVersion } from '../functions/function-config';
import { invocationWorkflow } from '../workflows';
import { DeployedFunctionsCache } from '../functions/deployed-functions-cache';
import { FunctionInvocationRunner, type InvocationError } from '../functions/function-invocation-runner';

/**
 * A run request travels as one NATS message (the server's max_payload, 1 MiB unless configured): what is
 * left for the input once the envelope and headers are counted. The bundle goes by its hash (the runtime
 * keeps bundles), so the room does not depend on the bundle's size. A bigger input is refused up front
 * rather than failing on the wire.
 */
const RUN_REQUEST_ENVELOPE_BYTES = 64 * 1024;
const DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024;

/**
 * A run's logs not found: read again after these waits (1.55 s in all) before answering 404. The replica
 * that ran a synchronous action writes its row after answering, and its first write after a start (a new
 * database connection) was seen to take longer than 200 ms.
 */
const UNWRITTEN_RETRY_MS = [50, 100, 200, 400, 800];

/** How long starting a workflow may take before Temporal counts as unavailable. */
const START_DEADLINE_MS = 5_000;

@Injectable()
export class ActionsService {
  constructor(
    @Inject(ORCHESTRATOR_DB) private readonly db: OrchestratorDb,
    private readonly runner: FunctionInvocationRunner,
    private readonly lookups: DeployedFunctionsCache,
    private readonly connections: KnownConnections,
    private readonly temporal: Client,
    @Inject(ORCHESTRATOR_ENV) private readonly env: OrchestratorEnv,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
  ) {}

  /**
   * `POST /action/trigger`. A synchronous action asks functions-runtime directly (no workflow between
   * the caller and the script, so the answer leaves as soon as the script is done); an async one is a
   * Temporal workflow whose id is the invocation id.
   */
  async trigger(
    request: ActionTriggerRequest,
  ): Promise<
    { async: false; invocationId: string; output: unknown } | { async: true; invocationId: string }
  > {
    const { caller } = request;
    const provider = await this.lookups.providerOf(caller, request.providerConfigKey);
    if (!provider) {
      throw new SwitchboardError(
        'unknown_provider_config',
        `There is no integration "${request.providerConfigKey}" in this environment`,
      );
    }
    await this.requireConnection(caller, request.providerConfigKey, request.connectionId);
    const fn = await this.lookups.action(caller.environmentId, request.providerConfigKey, request.actionName);
    if (!fn?.currentVersion) {
      throw new SwitchboardError(
        'not_found',
        `Action "${request.actionName}" is not deployed for integration "${request.providerConfigKey}"`,
      );
    }
    if (!fn.enabled)
      throw new SwitchboardError('disabled_resource', `Action "${request.actionName}" is disabled`);
    const inputBytes = request.input === undefined ? 0 : Buffer.byteLength(JSON.stringify(request.input));
    const room = (this.nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD_BYTES) - RUN_REQUEST_ENVELOPE_BYTES;
    if (inputBytes > room) {
      throw new SwitchboardError(
        'payload_too_large',
        `The action input is ${inputBytes} bytes; this action accepts at most ${Math.max(0, room)}`,
      );
    }

    if (!request.async) {
      const invocationId = request.invocationId ?? randomUUID();
      const outcome = await this.runner.runOnce(fn, request.connectionId, {
        invocationId,
        caller,
        provider,
        attempt: 1,
        input: request.input,
        wallTimeMs: this.env.SWITCHBOARD_ACTION_TIMEOUT_MS,
        depth: request.depth,
        final: true,
      });
      if (outcome.status === 'failed') throw toError(outcome.error, invocationId);
      return { async: false, invocationId, output: outcome.output };
    }
    const invocationId = await this.createInvocation(fn, caller, request.connectionId, {
      async: true,
      maxRetries: request.maxRetries,
    });
    await this.startWorkflow({
      invocationId,
      caller,
      provider,
      connectionId: request.connectionId,
      providerConfigKey: request.providerConfigKey,
      ...(request.input !== undefined ? { input: request.input } : {}),
      maxRetries: request.maxRetries,
      wallTimeMs: this.env.SWITCHBOARD_ACTION_TIMEOUT_MS,
      depth: request.depth,
      notify: true,
    });
    return { async: true, invocationId };
  }

  /** `GET /action/{id}`: Nango answers 404 both while the action runs and when it does not exist. */
  async result(caller: Caller, id: string): Promise<unknown> {
    await this.runner.written(id);
    const invocation = await this.db.invocation.findFirst({
      where: { id, environmentId: caller.environmentId, functionType: 'action' },
    });
    if (!invocation || invocation.status === 'running') {
      throw new SwitchboardError('not_found', `No action '${id}' found`);
    }
    if (invocation.status === 'failed') throw toError(invocation.error as unknown as InvocationError, id);
    return invocation.output;
  }

  async logs(caller: Caller, id: string): Promise<RunLogsResponse['data']> {
    await this.runner.written(id);
    const find = () =>
      this.db.invocation.findFirst({
        where: { id, environmentId: caller.environmentId },
        include: { logs: { orderBy: { id: 'asc' }, take: 10_000 } },
      });
    let invocation = await find();
    // A synchronous action is answered before its row is written (FunctionInvocationRunner.runOnce); another
    // replica may still be writing the row of the run id its caller was just given.
    for (let i = 0; !invocation && i < UNWRITTEN_RETRY_MS.length; i++) {
      await new Promise((resolve) => setTimeout(resolve, UNWRITTEN_RETRY_MS[i]));
      invocation = await find();
    }
    if (!invocation) throw new SwitchboardError('not_found', `No run '${id}' found`);
    return {
      id: invocation.id,
      function: invocation.functionName,
      type: invocation.functionType as RunLogsResponse['data']['type'],
      status: invocation.status as RunLogsResponse['data']['status'],
      attempts: invocation.attempts,
      created_at: invocation.createdAt.toISOString(),
      finished_at: invocation.finishedAt?.toISOString() ?? null,
      logs: invocation.logs.map((log) => ({
        attempt: log.attempt,
        level: log.level as RunLogsResponse['data']['logs'][number]['level'],
        message: log.message,
        at: log.at.toISOString(),
      })),
    };
  }

  /** A row pinning the function's current version: a redeploy meanwhile does not change what runs. */
  async createInvocation(
    fn: FunctionWithVersion,
    caller: Caller,
    connectionId: string,
    options: { async: boolean; maxRetries: number },
  ): Promise<string> {
    const id = randomUUID();
    await this.db.invocation.create({
      data: {
        id,
        environmentId: caller.environmentId,
        functionId: fn.id,
        versionId: fn.currentVersion!.id,
        functionName: fn.name,
        functionType: fn.type,
        providerConfigKey: fn.providerConfigKey,
        connectionId,
        async: options.async,
        maxRetries: options.maxRetries,
      },
    });
    return id;
  }

  /**
   * Starts a background run whose invocation id derives from the event that caused it, once: an id seen
   * before is left alone, unless Temporal was unreachable when it was first started (the event is retried
   * for that, and the run is started again).
   */
  async startOnce(fn: FunctionWithVersion, workflow: InvocationWorkflowInput): Promise<boolean> {
    const invocationId = workflow.invocationId;
    const existing = await this.db.invocation.findUnique({ where: { id: invocationId } });
    const unscheduled =
      existing?.status === 'failed' &&
      (existing.error as { code?: string } | null)?.code === 'service_unavailable';
    if (existing && !unscheduled) return false;
    if (existing) {
      await this.db.invocation.update({
        where: { id: invocationId },
        data: { status: 'running', error: Prisma.DbNull, finishedAt: null },
      });
    } else
      await this.db.invocation.create({
        data: {
          id: invocationId,
          environmentId: workflow.caller.environmentId,
          functionId: fn.id,
          versionId: fn.currentVersion!.id,
          functionName: fn.name,
          functionType: fn.type,
          providerConfigKey: fn.providerConfigKey,
          connectionId: workflow.connectionId,
          async: true,
          maxRetries: workflow.maxRetries,
        },
      });
    await this.startWorkflow(workflow);
    return true;
  }

  async startWorkflow(input: InvocationWorkflowInput): Promise<void> {
    try {
      await this.temporal.connection.withDeadline(Date.now() + START_DEADLINE_MS, () =>
        this.temporal.workflow.start(invocationWorkflow, {
          taskQueue: this.env.TEMPORAL_TASK_QUEUE,
          workflowId: input.invocationId,
          args: [{ ...input, heartbeatTimeoutMs: this.env.SWITCHBOARD_ACTION_HEARTBEAT_TIMEOUT_MS }],
        }),
      );
    } catch (error) {
      await this.db.invocation.update({
        where: { id: input.invocationId },
        data: {
          status: 'failed',
          finishedAt: new Date(),
          error: { code: 'service_unavailable', message: 'The run could not be scheduled' },
        },
      });
      throw new SwitchboardError(
        'service_unavailable',
        `Temporal is not reachable: ${(error as Error).message}`.slice(0, 500),
      );
    }
  }

  async requireConnection(caller: Caller, providerConfigKey: string, connectionId: string): Promise<void> {
    const exists = await this.connections.exists(caller.environmentId, providerConfigKey, connectionId);
    if (!exists) {
      throw new SwitchboardError(
        'unknown_connection',
        `Connection "${connectionId}" of integration "${providerConfigKey}" does not exist in this environment`,
      );
    }
  }

  /** The deployed on-event scripts of an integration for one event. */
  onEventScripts(
    environmentId: number,
    providerConfigKey: string,
    event: OnEventType,
  ): Promise<FunctionWithVersion[]> {
    return this.db.deployedFunction.findMany({
      where: { environmentId, providerConfigKey, type: 'on-event', event, enabled: true },
      include: WITH_VERSION,
      orderBy: { name: 'asc' },
    });
  }
}

/** Failures whose payload is the caller's to read, as Nango answers them. */
const PAYLOAD_CODES: ReadonlySet<string> = new Set([
  // An ActionError's payload, as the script gave it.
  'action_script_runtime_error',
  // A thrown Error: `{name, message}`.
  'script_internal_error',
  // The zod issues of the action's input or output schema.
  'invalid_action_input',
  'invalid_action_output',
]);

function toError(error: InvocationError, invocationId: string): SwitchboardError {
  return new SwitchboardError(
    error.code,
    error.message,
    undefined,
    // Other failures carry the run id for the logs.
    PAYLOAD_CODES.has(error.code) && error.payload !== undefined ? error.payload : { run_id: invocationId },
  );
}
