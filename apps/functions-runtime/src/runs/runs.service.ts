import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { FunctionRunRequest, FunctionRunResult, FunctionType } from '@switchboard/contracts';
import { context, SpanStatusCode, trace } from '@switchboard/observability';
import { FUNCTIONS_RUNTIME_ENV, type FunctionsRuntimeEnv } from '../config/env';
import { HostCalls, type RunScope } from '../host/host-calls';
import {
  configurePool,
  configureReadyContexts,
  configureSpares,
  disposeSandbox,
  runInSandbox,
  sandboxLibrary,
  type RunLimits,
  type SandboxOutcome,
} from '../sandbox/sandbox';
import { BundleCache } from './bundle-cache';
import { OutputStore } from './output-store';
import { RunCancellations } from './run-cancellations';
import { RunSlots } from './run-slots';
import { recordFunctionRun } from '../metrics';

const tracer = trace.getTracer('@switchboard/functions-runtime');

/**
 * Runs one invocation: resolves its limits (what the request asks, capped by configuration), runs it in
 * a fresh sandbox with the host calls its type gets, and shapes the answer. A failing script is a normal
 * answer (`status: 'failure'`); only a bad request or a broken object store is a transport error.
 */
@Injectable()
export class RunsService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('Runs');
  private readonly slots: RunSlots;

  constructor(
    @Inject(FUNCTIONS_RUNTIME_ENV) private readonly env: FunctionsRuntimeEnv,
    private readonly hostCalls: HostCalls,
    private readonly outputs: OutputStore,
    private readonly bundles: BundleCache,
    private readonly cancellations: RunCancellations,
  ) {
    this.slots = new RunSlots(env.FUNCTIONS_MAX_CONCURRENT_RUNS);
  }

  /** The sandbox library is loaded at boot: a missing or broken `dist/sandbox-lib.js` fails the start. */
  onModuleInit(): void {
    sandboxLibrary();
    configureSpares(this.env.FUNCTIONS_SPARE_ISOLATES, this.env.FUNCTIONS_MEMORY_LIMIT_MB);
    configurePool(this.env.FUNCTIONS_POOLED_ISOLATES);
    configureReadyContexts(this.env.FUNCTIONS_READY_CONTEXTS);
  }

  /** The spare and pooled isolates go with the module (a test app closed, a shutdown). */
  onModuleDestroy(): void {
    disposeSandbox();
  }

  limitsFor(req: FunctionRunRequest): RunLimits {
    const cap = (asked: number | undefined, max: number) => Math.min(asked ?? max, max);
    return {
      memoryMb: cap(req.limits.memoryMb, this.env.FUNCTIONS_MEMORY_LIMIT_MB),
      cpuTimeMs: cap(
        req.limits.cpuTimeMs,
        req.function.type === 'sync' ? this.env.FUNCTIONS_SYNC_CPU_LIMIT_MS : this.env.FUNCTIONS_CPU_LIMIT_MS,
      ),
      wallTimeMs: cap(req.limits.wallTimeMs, this.wallLimit(req.function.type)),
      outputBytes: cap(req.limits.outputBytes, this.env.FUNCTIONS_OUTPUT_LIMIT_BYTES),
      logLines: this.env.FUNCTIONS_LOG_LINES_LIMIT,
      logLineChars: this.env.FUNCTIONS_LOG_LINE_CHARS,
      logTotalChars: this.env.FUNCTIONS_LOG_TOTAL_CHARS,
      abortGraceMs: this.env.FUNCTIONS_ABORT_GRACE_MS,
    };
  }

  private wallLimit(type: FunctionType): number {
    switch (type) {
      case 'action':
        return this.env.FUNCTIONS_ACTION_WALL_LIMIT_MS;
      case 'on-event':
        return this.env.FUNCTIONS_ON_EVENT_WALL_LIMIT_MS;
      case 'sync':
        return this.env.FUNCTIONS_SYNC_WALL_LIMIT_MS;
    }
  }

  async run(req: FunctionRunRequest): Promise<FunctionRunResult> {
    // Stopped from outside: `functions.v1.cancel`, a lease not renewed, or a write the orchestrator refused
    // as superseded. Tracked from the request's arrival, so a run waiting for a slot answers its lease
    // renewals too (its caller must not take it for lost) and is dropped when its caller is gone.
    const cancel = new AbortController();
    const stopRun = (reason: string) => {
      if (!cancel.signal.aborted) cancel.abort(reason);
    };
    const untrack = this.cancellations.track(req.invocationId, req.attempt, stopRun, req.lease?.ttlMs);
    try {
      return await this.runInSlot(req, cancel.signal, stopRun);
    } finally {
      untrack();
    }
  }

  private async runInSlot(
    req: FunctionRunRequest,
    cancelled: AbortSignal,
    stopRun: (reason: string) => void,
  ): Promise<FunctionRunResult> {
    const slot = { release: await this.slots.acquire() };
    try {
      return await tracer.startActiveSpan(
        `function.run ${req.function.type}`,
        {
          attributes: {
            'switchboard.function.name': req.function.name,
            'switchboard.function.type': req.function.type,
            'switchboard.function.version': req.function.version,
            'switchboard.invocation_id': req.invocationId,
            'switchboard.environment_id': req.caller.environmentId,
            'switchboard.provider_config_key': req.connection.providerConfigKey,
            ...(req.sync ? { 'switchboard.sync.mode': req.sync.mode } : {}),
          },
        },
        async (span) => {
          try {
            const result = await this.execute(req, slot, cancelled, stopRun);
            span.setAttribute('switchboard.function.status', result.status);
            recordFunctionRun(
              req.function.type,
              result.status,
              result.durationMs,
              result.status === 'failure' ? result.error.code : undefined,
            );
            if (result.status === 'failure') {
              span.setAttribute('switchboard.error_code', result.error.code);
              span.setStatus({ code: SpanStatusCode.ERROR });
            }
            this.logger.log(
              `${req.function.type} ${req.function.name} (${req.invocationId}): ${result.status}` +
                `${result.status === 'failure' ? ` ${result.error.code}` : ''} in ${Math.round(result.durationMs)} ms`,
            );
            return result;
          } finally {
            span.end();
          }
        },
      );
    } finally {
      slot.release();
    }
  }

  private async execute(
    req: FunctionRunRequest,
    slot: { release: () => void },
    cancelled: AbortSignal,
    stopRun: (reason: string) => void,
  ): Promise<FunctionRunResult> {
    // By its hash, from this replica's cache or the orchestrator (a request carries the bundle only rarely).
    const code = await this.bundles.codeOf(req);
    const limits = this.limitsFor(req);
    const runContext = context.active();
    // `deadline` fires at the wall clock (provider calls stop, abortSignal fires in the script); `stop`
    // when the run is over (every host call stops). Between the two is the abort grace.
    const deadline = new AbortController();
    const stop = new AbortController();
    const scope = this.runScope(req, slot, { deadline, stop, stopRun });
    let outcome;
    try {
      outcome = await runInSandbox({
        type: req.function.type,
        name: req.function.name,
        code,
        input: req.input,
        connectionId: scope.connectionId,
        providerConfigKey: scope.providerConfigKey,
        provider: scope.provider,
        invocationId: req.invocationId,
        variant: scope.variant,
        // A sync run in webhook mode runs the script's webhook handler with the provider's payload.
        entry: req.function.type === 'sync' && req.sync?.mode === 'webhook' ? 'onWebhook' : 'exec',
        lastSyncDate: req.sync?.lastSyncDate ?? null,
        ...(req.function.attributes ? { attributes: req.function.attributes } : {}),
        limits,
        // An isolate serves later runs only of this environment and this exact bundle.
        poolKey: `${req.caller.environmentId}\u0000${req.function.id}\u0000${req.function.codeSha256}`,
        // isolated-vm calls back from its own thread, outside Node's async context: the run's span is
        // put back around each host call so provider calls and NATS requests stay in the run's trace.
        hostCall: (name, args) => context.with(runContext, () => this.hostCalls.dispatch(scope, name, args)),
        onWallClock: () => deadline.abort(),
        abort: cancelled,
      });
    } finally {
      // Not awaited: the answer does not wait for the release (the locks expire with their TTL anyway).
      void this.hostCalls.releaseLocks(scope);
      // Whatever the script left running host-side (a proxied call, a sleep) ends with the run.
      deadline.abort();
      stop.abort();
    }
    return this.resultOf(req, outcome, limits);
  }

  /** What a host call knows of its run: who, which connection, its signals and its slot. */
  private runScope(
    req: FunctionRunRequest,
    slot: { release: () => void },
    run: { deadline: AbortController; stop: AbortController; stopRun: (reason: string) => void },
  ): RunScope {
    return {
      caller: req.caller,
      invocationId: req.invocationId,
      attempt: req.attempt,
      functionName: req.function.name,
      type: req.function.type,
      connectionId: req.connection.connectionId,
      providerConfigKey: req.connection.providerConfigKey,
      provider: req.connection.provider,
      variant: req.variant ?? 'base',
      ...(req.sync ? { sync: req.sync } : {}),
      merging: new Map(),
      locks: { taken: false },
      ...(req.candidate ? { candidate: req.candidate } : {}),
      depth: req.depth,
      deadline: run.deadline.signal,
      signal: run.stop.signal,
      stop: run.stopRun,
      // A run waiting on an action it triggered gives its slot to that action (which may need one on this
      // very process) and takes a slot again after: otherwise chains of triggers could hold every slot
      // while waiting for one. The depth limit bounds how many runs wait like this per chain.
      whileWaiting: async (wait) => {
        slot.release();
        try {
          return await wait();
        } finally {
          slot.release = await this.slots.acquire();
        }
      },
    };
  }

  /** The run's answer: its output inline or stored, or a failure when it is over its limits. */
  private async resultOf(
    req: FunctionRunRequest,
    outcome: SandboxOutcome,
    limits: RunLimits,
  ): Promise<FunctionRunResult> {
    const { logs, logsDropped, durationMs, cpuTimeMs } = outcome;
    const stats = { logs, logsDropped, durationMs, cpuTimeMs };
    if (outcome.status === 'failure') {
      // An ActionError payload (or zod issues) travels inline: it must fit the reply like an inline output.
      const payloadBytes =
        outcome.error.payload === undefined ? 0 : Buffer.byteLength(JSON.stringify(outcome.error.payload));
      if (payloadBytes > this.env.FUNCTIONS_INLINE_OUTPUT_BYTES) {
        return {
          status: 'failure',
          error: {
            code: 'script_output_too_large',
            message: `the error payload is ${payloadBytes} bytes, over the limit of ${this.env.FUNCTIONS_INLINE_OUTPUT_BYTES} bytes (${outcome.error.code}: ${outcome.error.message})`,
          },
          ...stats,
        };
      }
      return { status: 'failure', error: outcome.error, ...stats };
    }
    if (outcome.outputJson === undefined) return { status: 'success', ...stats };

    const bytes = Buffer.from(outcome.outputJson, 'utf8');
    if (bytes.length > limits.outputBytes) {
      return {
        status: 'failure',
        error: {
          code: 'script_output_too_large',
          message: `the output is ${bytes.length} bytes, over the limit of ${limits.outputBytes} bytes`,
        },
        ...stats,
      };
    }
    let output: unknown;
    try {
      output = JSON.parse(outcome.outputJson);
    } catch {
      // Only a script that tampered with the sandbox's own JSON gets here.
      return {
        status: 'failure',
        error: { code: 'script_runtime_error', message: 'the output is not valid JSON' },
        ...stats,
      };
    }
    if (bytes.length > this.env.FUNCTIONS_INLINE_OUTPUT_BYTES) {
      return { status: 'success', outputRef: await this.outputs.put(req.invocationId, bytes), ...stats };
    }
    return { status: 'success', output, ...stats };
  }
}
