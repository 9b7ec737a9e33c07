import {
  FUNCTION_OUTPUT_BUCKET,
  functionRunResultSchema,
  SwitchboardError,
  type CandidateConnection,
  type Caller,
  type ErrorCode,
  type FunctionFailureCode,
  type FunctionRunRequest,
  type FunctionRunResult,
  type OnEventType,
} from '@switchboard/contracts';
import type { OrchestratorDb, Prisma } from '@switchboard/db';
import { parseStoredJson, PayloadStore, type NatsRequester } from '@switchboard/messaging';
import type { NatsConnection } from 'nats';
import { Logger } from '@nestjs/common';
import {
  inlineBundle,
  VERSION_WITHOUT_CODE,
  type FunctionWithVersion,
  type StoredConfig,
} from './function-config';
import { runLeased } from './leased-run';

const logger = new Logger('FunctionInvocationRunner');

/** Rows of answered actions being written at once beyond which an action's answer waits for its own. */
const MAX_UNAWAITED_WRITES = 64;

/** Largest action output stored and answered; Nango's is 2 MB, ours is what the issue asks for. */
export const MAX_ACTION_OUTPUT_BYTES = 10 * 1024 * 1024;

/** The error an invocation ended with, as stored and as answered to the caller. */
export interface InvocationError {
  code: ErrorCode;
  message: string;
  payload?: unknown;
}

export type AttemptOutcome =
  | { status: 'succeeded'; output: unknown }
  | { status: 'failed'; error: InvocationError; retryable: boolean };

export interface AttemptInput {
  invocationId: string;
  caller: Caller;
  provider: string;
  attempt: number;
  input?: unknown;
  event?: OnEventType;
  /** validate-connection: the connection being validated (not stored yet). */
  candidate?: CandidateConnection;
  wallTimeMs: number;
  /** How many `nango.triggerAction` calls led here (0 from the API); the runtime bounds the chain. */
  depth?: number;
  /** The last attempt: the invocation's status is settled with its outcome. */
  final: boolean;
  /** Called with each renewal of the script's lease (a Temporal activity's heartbeat). */
  heartbeat?: () => void;
}

/** The runtime's failure codes as the public API names them (Nango's where it has one). */
function publicCode(code: FunctionFailureCode): ErrorCode {
  switch (code) {
    case 'action_script_runtime_error':
      return 'action_script_runtime_error';
    case 'script_invalid_input':
      return 'invalid_action_input';
    case 'script_invalid_output':
      return 'invalid_action_output';
    case 'script_output_too_large':
      return 'action_output_too_large';
    case 'script_timeout':
      return 'script_timeout';
    // A plain error thrown by the script: Nango's runner answers it as script_internal_error.
    case 'script_runtime_error':
      return 'script_internal_error';
    case 'script_load_error':
    case 'script_cpu_limit':
    case 'script_memory_limit':
    case 'script_aborted':
    case 'script_forbidden_call':
      return 'action_script_failure';
    default: {
      const unknownCode: never = code;
      return unknownCode;
    }
  }
}

/**
 * Runs one attempt of an invocation on functions-runtime and records it: the logs, the attempt count
 * and, on a final or successful attempt, the outcome. Plain class (no Nest), because both the service
 * (synchronous actions, answered within milliseconds of the script finishing) and the Temporal worker's
 * activity (async actions, on-event scripts) use it.
 */
export class FunctionInvocationRunner {
  /** Synchronous actions answered whose rows are being written, by invocation id. */
  private readonly writing = new Map<string, Promise<void>>();

  constructor(
    private readonly db: OrchestratorDb,
    private readonly nats: NatsRequester,
    private readonly nc: NatsConnection,
    /** The script's lease on functions-runtime (SWITCHBOARD_ACTION_HEARTBEAT_TIMEOUT_MS). */
    private readonly leaseTtlMs: number,
  ) {}

  async attempt(input: AttemptInput): Promise<AttemptOutcome> {
    const invocation = await this.db.invocation.findUnique({ where: { id: input.invocationId } });
    if (!invocation) throw new Error(`invocation ${input.invocationId} not found`);
    const version = await this.db.functionVersion.findUnique({
      where: { id: invocation.versionId },
      select: VERSION_WITHOUT_CODE,
    });
    const startedAt = new Date();
    await this.db.invocation.update({
      where: { id: invocation.id },
      data: { attempts: input.attempt, ...(input.attempt === 1 ? { startedAt } : {}) },
    });
    let outcome: AttemptOutcome;
    let logs: FunctionRunResult['logs'] = [];
    if (!version) {
      outcome = {
        status: 'failed',
        error: { code: 'action_script_failure', message: 'The function version no longer exists' },
        retryable: false,
      };
    } else {
      const inline = await inlineBundle(this.db, version.id, invocation.functionId);
      ({ outcome, logs } = await this.run(
        this.requestFor(invocation, version, input, inline),
        input.wallTimeMs,
        input.heartbeat,
      ));
    }
    await this.record(invocation.id, input, outcome, logs);
    return outcome;
  }

  /**
   * A synchronous action, run once and written once: the invocation row is inserted with its outcome
   * and logs in one transaction when the script is done, instead of created before and updated after
   * (bench/README.md, "Why the current settings"). Nobody can ask for a synchronous action's result while it
   * runs (`GET /action/{id}` serves async ones), so nothing needs the row earlier.
   *
   * The outcome is answered without waiting for that write (it was a share of every action's latency,
   * bench/README.md, "Why the current settings"): the caller's answer does not depend on it. Its run id does lead to the
   * logs, so a read of this invocation waits for a write still under way here (`written`), and the
   * process finishes its writes before it disconnects (`beforeApplicationShutdown`). A crash meanwhile
   * leaves no row, as a crash during the run always did; a failed write is logged (the caller has its
   * answer: the row only records it). Past `MAX_UNAWAITED_WRITES` under way, answers wait for their write.
   */
  async runOnce(fn: FunctionWithVersion, connectionId: string, input: AttemptInput): Promise<AttemptOutcome> {
    const version = fn.currentVersion!;
    const invocation = {
      id: input.invocationId,
      functionId: fn.id,
      functionName: fn.name,
      functionType: fn.type,
      providerConfigKey: fn.providerConfigKey,
      connectionId,
    };
    const startedAt = new Date();
    const { outcome, logs } = await this.run(this.requestFor(invocation, version, input), input.wallTimeMs);
    const create = this.db.invocation.create({
      data: {
        ...invocation,
        environmentId: input.caller.environmentId,
        versionId: version.id,
        async: false,
        maxRetries: 0,
        attempts: 1,
        createdAt: startedAt,
        startedAt,
        finishedAt: new Date(),
        ...settled(outcome),
      },
    });
    const write = (
      logs.length === 0
        ? create
        : this.db.$transaction([create, this.logRows(invocation.id, input.attempt, logs)])
    ).then(
      () => undefined,
      (error: unknown) =>
        logger.error(`invocation ${invocation.id} was not recorded: ${(error as Error).message}`),
    );
    this.writing.set(invocation.id, write);
    void write.finally(() => this.writing.delete(invocation.id));
    // A database slower than the actions keeps them waiting again, rather than piling writes up here.
    if (this.writing.size > MAX_UNAWAITED_WRITES) await write;
    return outcome;
  }

  /** Resolves once this process's write of a synchronous action's row (if one is under way) is done. */
  async written(invocationId: string): Promise<void> {
    await this.writing.get(invocationId);
  }

  /** Nest's hook (before the database disconnects): the rows of answered actions are written first. */
  async beforeApplicationShutdown(): Promise<void> {
    await Promise.all(this.writing.values());
  }

  private requestFor(
    invocation: {
      id: string;
      functionId: number | null;
      functionName: string;
      functionType: string;
      providerConfigKey: string;
      connectionId: string;
    },
    version: { version: string; sha256: string; config: unknown },
    input: AttemptInput,
    inline: { code?: string } = {},
  ): FunctionRunRequest & { lease: { ttlMs: number } } {
    const config = version.config as unknown as StoredConfig;
    const definitions = (config.json_schema?.definitions ?? {}) as Record<string, unknown>;
    return {
      caller: input.caller,
      invocationId: invocation.id,
      function: {
        id: String(invocation.functionId ?? ''),
        name: invocation.functionName,
        type: invocation.functionType as FunctionRunRequest['function']['type'],
        version: version.version,
        codeSha256: version.sha256,
        // By its hash (the runtime keeps bundles); inline only when no function id lets the runtime ask.
        ...inline,
        ...(config.attributes && Object.keys(config.attributes).length > 0
          ? { attributes: config.attributes }
          : {}),
        ...(config.input && definitions[config.input] !== undefined
          ? { inputJsonSchema: definitions[config.input] }
          : {}),
      },
      connection: {
        connectionId: invocation.connectionId,
        providerConfigKey: invocation.providerConfigKey,
        provider: input.provider,
      },
      ...(input.input !== undefined ? { input: input.input } : {}),
      ...(input.event ? { event: input.event } : {}),
      ...(input.candidate ? { candidate: input.candidate } : {}),
      attempt: input.attempt,
      depth: input.depth ?? 0,
      limits: { wallTimeMs: input.wallTimeMs, outputBytes: MAX_ACTION_OUTPUT_BYTES },
      lease: { ttlMs: this.leaseTtlMs },
    };
  }

  /**
   * The run, leased (`runLeased`): a runtime replica that dies under it ends the attempt within the lease
   * as `function_runtime_lost` (retryable: an async action's next attempt goes to another replica), instead
   * of after the action's time limit.
   */
  private async run(
    request: FunctionRunRequest & { lease: { ttlMs: number } },
    wallTimeMs: number,
    heartbeat?: () => void,
  ): Promise<{ outcome: AttemptOutcome; logs: FunctionRunResult['logs'] }> {
    let result: FunctionRunResult;
    try {
      const reply = await runLeased({
        nc: this.nc,
        nats: this.nats,
        request,
        // The runtime ends the script at wallTimeMs; the margin is for loading and answering.
        timeoutMs: wallTimeMs + 5_000,
        ...(heartbeat ? { heartbeat } : {}),
      });
      result = functionRunResultSchema.parse(reply);
    } catch (error) {
      const message =
        error instanceof SwitchboardError
          ? error.message
          : `functions-runtime sent an answer we could not read: ${(error as Error).message}`;
      return {
        outcome: {
          status: 'failed',
          error: { code: error instanceof SwitchboardError ? error.code : 'server_error', message },
          retryable: true,
        },
        logs: [],
      };
    }
    return { outcome: await this.outcomeOf(result), logs: result.logs };
  }

  private async outcomeOf(result: FunctionRunResult): Promise<AttemptOutcome> {
    if (result.status === 'failure') {
      const code = publicCode(result.error.code);
      return {
        status: 'failed',
        error: {
          code,
          message: result.error.message,
          ...(result.error.payload !== undefined ? { payload: result.error.payload } : {}),
        },
        // A bad input stays bad however often it is tried.
        retryable: result.error.code !== 'script_invalid_input',
      };
    }
    let output = result.output;
    if (result.outputRef) {
      if (result.outputRef.bytes > MAX_ACTION_OUTPUT_BYTES) {
        return this.tooLarge(result.outputRef.bytes);
      }
      const blob = await new PayloadStore(this.nc, FUNCTION_OUTPUT_BUCKET).take(result.outputRef.name);
      if (!blob) {
        return {
          status: 'failed',
          error: { code: 'server_error', message: 'The action output was lost before it was read' },
          retryable: true,
        };
      }
      output = parseStoredJson(blob);
    } else {
      const bytes = Buffer.byteLength(JSON.stringify(output ?? null));
      if (bytes > MAX_ACTION_OUTPUT_BYTES) return this.tooLarge(bytes);
    }
    return { status: 'succeeded', output: output ?? null };
  }

  private tooLarge(bytes: number): AttemptOutcome {
    return {
      status: 'failed',
      error: {
        code: 'action_output_too_large',
        message: `The action returned ${bytes} bytes; the limit is ${MAX_ACTION_OUTPUT_BYTES} bytes`,
      },
      retryable: false,
    };
  }

  private logRows(id: string, attempt: number, logs: FunctionRunResult['logs']) {
    return this.db.invocationLog.createMany({
      data: logs.map((log) => ({
        invocationId: id,
        attempt,
        level: log.level,
        message: log.message.slice(0, 64 * 1024),
        at: new Date(log.at),
      })),
    });
  }

  private async record(
    id: string,
    input: AttemptInput,
    outcome: AttemptOutcome,
    logs: FunctionRunResult['logs'],
  ): Promise<void> {
    const settle = outcome.status === 'succeeded' || input.final || !outcome.retryable;
    await this.db.$transaction([
      ...(logs.length > 0 ? [this.logRows(id, input.attempt, logs)] : []),
      ...(settle
        ? [
            this.db.invocation.update({
              where: { id },
              data: { ...settled(outcome), finishedAt: new Date() },
            }),
          ]
        : []),
    ]);
  }
}

/** The columns an invocation settles with. */
function settled(outcome: AttemptOutcome) {
  return outcome.status === 'succeeded'
    ? { status: 'succeeded', output: outcome.output as Prisma.InputJsonValue }
    : { status: 'failed', error: outcome.error as unknown as Prisma.InputJsonValue };
}
