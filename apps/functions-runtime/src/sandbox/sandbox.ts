import type { FunctionFailureCode, FunctionLog, FunctionType } from '@switchboard/contracts';
import ivm from 'isolated-vm';
import { IsolatePool, MAX_RUNS_PER_ISOLATE, PREPARE_TIMEOUT_MS } from './isolate-pool';
import {
  IsolateFactory,
  releaseContext,
  type PreparedIsolate,
  type RunContext,
  type SandboxLibrary,
} from './isolates';
import { hostCallArgs, parseResult, type HostCallArgs } from './run-result';
import { RunWatch, type BrokenLimit } from './run-watch';
import { SpareIsolates } from './spare-isolates';

export type { HostCallArgs } from './run-result';

/** The limits one run gets, already capped by configuration. */
export interface RunLimits {
  memoryMb: number;
  cpuTimeMs: number;
  wallTimeMs: number;
  outputBytes: number;
  logLines: number;
  logLineChars: number;
  /** Log text kept per run, all lines together. */
  logTotalChars: number;
  /** After the wall clock: how long the script may wind down (abortSignal fired) before it is disposed. */
  abortGraceMs: number;
}

export interface SandboxRequest {
  type: FunctionType;
  name: string;
  code: string;
  input: unknown;
  connectionId: string;
  providerConfigKey: string;
  provider: string;
  invocationId: string;
  variant: string;
  /**
   * Which handler of the bundle runs: `exec` (the default), or a sync's webhook handler (`onWebhook` of
   * `createSync`, or a legacy script's exported `onWebhookPayloadReceived`) with `input` as the payload.
   */
  entry?: 'exec' | 'onWebhook';
  /** Syncs: when the last successful run started (`nango.lastSyncDate`), null on a first or full run. */
  lastSyncDate?: string | null;
  /** The function's deployed attributes (`nango.getFlowAttributes()`). */
  attributes?: Record<string, unknown>;
  limits: RunLimits;
  /** Answers one host call with the JSON envelope the prelude expects; never rejects. */
  hostCall(name: string, args: HostCallArgs): Promise<string>;
  /** Called once when the run's wall clock is up (or it is stopped from outside), so in-flight host calls stop. */
  onWallClock(): void;
  /**
   * Stops the run from outside (its sync run was cancelled or superseded) as the wall clock does: the
   * script's abortSignal fires, it gets the abort grace, then the isolate is disposed; the answer is
   * `script_aborted` with the signal's reason.
   */
  abort?: AbortSignal;
  /**
   * Runs with the same key may reuse one isolate, one run at a time and each in a new context (README,
   * "Isolates"): the runtime passes the environment and the function version. Absent: a fresh isolate,
   * disposed of after the run.
   */
  poolKey?: string;
}

export type SandboxOutcome = {
  logs: FunctionLog[];
  logsDropped: number;
  durationMs: number;
  cpuTimeMs: number;
  /** The run got an isolate an earlier run of the same pool key had used (with a new context). */
  reusedIsolate: boolean;
  /** The run's new context was made ahead of it, after the isolate's previous run ("ready contexts"). */
  readyContext: boolean;
} & (
  | {
      status: 'success';
      /** The output as JSON text, absent when the function returned undefined. */ outputJson?: string;
    }
  | {
      status: 'failure';
      error: { code: FunctionFailureCode; message: string; payload?: unknown; cause?: { code: string } };
    }
);

/** How many isolates of a key may be in the making (none ready) for a run to take a spare rather than wait. */
const SPARE_FIRST_BELOW = 3;

/**
 * The process's isolates: made by one factory (library, code cache), kept as spares ahead of need and
 * pooled between runs of one function version. Configured at boot (`configure*`), disposed of when the
 * module stops (`disposeSandbox`).
 */
const isolates = new IsolateFactory();
const spares = new SpareIsolates(isolates);
const pool = new IsolatePool(isolates);
/** Isolates serving a run right now (with the pooled and spare ones: every isolate of the process). */
const running = new Set<ivm.Isolate>();

/** Loads the library (a missing or broken `dist/sandbox-lib.js` throws): called at boot. */
export function sandboxLibrary(): SandboxLibrary {
  return isolates.library();
}

export function configureSpares(count: number, memoryMb: number): void {
  spares.configure(count, memoryMb);
}

export function configurePool(maxIdle: number): void {
  pool.configure(maxIdle);
}

/**
 * Ready contexts on (the default) or off: `scripts/measure-runs.mjs` compares both in one process. With
 * `prepareTimeoutMs`, how long making one may take (tests whose module top level is heavy on purpose).
 */
export function configureReadyContexts(on: boolean, prepareTimeoutMs = PREPARE_TIMEOUT_MS): void {
  pool.readyContexts = on;
  pool.prepareTimeoutMs = prepareTimeoutMs;
}

/** Idle isolates kept right now (tests and metrics). */
export function pooledIsolates(): number {
  return pool.size;
}

/** Resolves once every isolate whose run has ended is back in its pool or disposed of (tests). */
export async function isolatesReturned(): Promise<void> {
  await pool.returned();
}

/** Resolves once the spares are made and every pooled isolate has its next ready context (tests). */
export async function sandboxSettled(): Promise<void> {
  await Promise.all([spares.stocked(), pool.contextsMade()]);
}

/** Disposes of every idle and spare isolate and drops the code cache (the module is stopping). */
export function disposeSandbox(): void {
  spares.dispose();
  pool.dispose();
  isolates.dispose();
}

/**
 * The V8 heaps of every isolate of the process (running, pooled, spare), summed: they sit outside the
 * process's own V8 heap (`process.memoryUsage()` does not count them) but inside its RSS. For the
 * memory bench (`bench/records`), read through the inspector.
 */
export function sandboxMemory(): {
  isolates: number;
  totalHeapBytes: number;
  usedHeapBytes: number;
  externalBytes: number;
  mallocedBytes: number;
} {
  const all = [...running, ...spares.isolates(), ...pool.isolates()];
  const sum = { isolates: 0, totalHeapBytes: 0, usedHeapBytes: 0, externalBytes: 0, mallocedBytes: 0 };
  for (const isolate of all) {
    try {
      const heap = isolate.getHeapStatisticsSync();
      sum.isolates++;
      sum.totalHeapBytes += heap.total_heap_size;
      sum.usedHeapBytes += heap.used_heap_size;
      sum.externalBytes += heap.externally_allocated_size;
      sum.mallocedBytes += heap.malloced_memory;
    } catch {
      // disposed meanwhile
    }
  }
  return sum;
}

async function isolateFor(
  memoryMb: number,
  poolKey: string | undefined,
): Promise<{ prepared: PreparedIsolate; ctx: RunContext; reused: boolean; ready: boolean }> {
  let reused = poolKey === undefined ? undefined : pool.take(poolKey, true);
  const back = poolKey === undefined ? undefined : pool.returningOf(poolKey);
  if (!reused && back) {
    // An isolate of the key is on its way back (its heap being read): as good as pooled.
    await Promise.all(back);
    reused = pool.take(poolKey!, true);
  }
  // No ready context of the key and few in the making (few runs of it at a time): a spare isolate
  // (library evaluated, zod's common paths compiled) starts this run sooner than waiting would, and then
  // joins the pool, so that runs one after another take turns on a few isolates, each made ready while
  // the others serve. With more of the key's isolates in the making, the oldest is awaited.
  const spareFirst =
    !reused &&
    poolKey !== undefined &&
    pool.readyContexts &&
    memoryMb === spares.memoryMb &&
    spares.available > 0;
  if (!reused && poolKey !== undefined && !(spareFirst && pool.sizeOf(poolKey) < SPARE_FIRST_BELOW)) {
    reused = pool.take(poolKey);
  }
  if (reused) {
    const next = reused.next;
    reused.next = undefined;
    reused.nextSettled = false;
    // Still being made: it is the work this run would do anyway, already under way.
    const ready = next ? await next : undefined;
    if (ready && !reused.isolate.isDisposed)
      return { prepared: reused, ctx: ready, reused: true, ready: true };
    if (!reused.isolate.isDisposed) {
      try {
        return { prepared: reused, ctx: await isolates.newContext(reused), reused: true, ready: false };
      } catch (error) {
        if (!reused.isolate.isDisposed) reused.isolate.dispose();
        throw error;
      }
    }
    // Disposed of while its context was made (it could not be): a new isolate, as for a first run.
  }
  const spare = spares.take(memoryMb);
  const prepared = spare ?? (await isolates.prepare(memoryMb));
  const context = prepared.context!;
  prepared.context = undefined;
  try {
    return { prepared, ctx: await isolates.withPrelude(prepared, context), reused: false, ready: false };
  } catch (error) {
    if (!prepared.isolate.isDisposed) prepared.isolate.dispose();
    throw error;
  }
}

/**
 * Runs one invocation in a new context, in a fresh isolate or (with a pool key) in one that served an
 * earlier run of the same environment and function version, and disposes of the isolate unless it can
 * serve another such run cleanly. Either way no context is ever shared: nothing of one run's globals
 * reaches the next, and two environments never share an isolate. The isolate runs on its own thread;
 * this thread keeps serving host calls and watches the CPU and wall clocks, and disposing of the isolate
 * is what ends a run that breaks a limit.
 */
export async function runInSandbox(req: SandboxRequest): Promise<SandboxOutcome> {
  const started = performance.now();
  const log: RunLog = { logs: [], dropped: 0, chars: 0 };

  const taken = await isolateFor(req.limits.memoryMb, req.poolKey);
  const { prepared, reused } = taken;
  let { ctx, ready } = taken;
  const { isolate } = prepared;
  prepared.runs++;
  running.add(isolate);
  const watch = new RunWatch(isolate, () => ctx, req);
  const stats = (cpuTimeMs: number) => ({
    logs: log.logs,
    logsDropped: log.dropped,
    durationMs: performance.now() - started,
    cpuTimeMs,
    reusedIsolate: reused,
    readyContext: ready,
  });

  let resultJson: string | undefined;
  let thrown: unknown;
  let cpuTimeMs = 0;
  let host: HostBindings | undefined;
  try {
    host = hostBindings(req, log);
    const refs = host.refs;
    const meta = runMeta(req);
    // The run's bindings, in one call: the prelude keeps them in its closures (no global holds them).
    const bind = () => ctx.control.apply(undefined, ['bind', ...refs, meta]);
    const inputJson = req.input === undefined ? undefined : JSON.stringify(req.input);
    // The ready context's module top level used a run capability (or the bundle reached code that did):
    // the run starts over on a new context, where the top level runs after the bindings, as before.
    const startOver = async () => {
      prepared.loadAhead = false;
      releaseContext(ctx);
      watch.cpuAtStart += ctx.loadCpuMs;
      ctx = await isolates.newContext(prepared);
      ready = false;
      if ((await bind()) !== 'ok') throw new Error('the sandbox prelude did not take the run');
    };
    if (ready && ctx.bundleLoaded) {
      // A ready context: bound and started in one crossing into the isolate (prelude/index.ts, `run`).
      resultJson = await runScript(ctx, ['run', ...refs, meta, inputJson]);
      if (typeof resultJson === 'string' && resultJson.startsWith('\u0000')) {
        resultJson = undefined;
        await startOver();
      }
    } else if ((await bind()) !== 'ok') {
      if (!ready) throw new Error('the sandbox prelude did not take the run');
      await startOver();
    }
    if (resultJson === undefined) {
      if (!ctx.bundleLoaded) {
        const loadError = await loadBundle(prepared, ctx, req);
        if (loadError !== undefined) {
          return {
            status: 'failure',
            error: { code: 'script_load_error', message: loadError },
            ...stats(watch.cpuMs()),
          };
        }
      }
      resultJson = await runScript(ctx, ['start', inputJson]);
    }
  } catch (error) {
    thrown = error;
  } finally {
    running.delete(isolate);
    watch.stop();
    cpuTimeMs = watch.cpuMs();
    if (!watch.broken && isolate.isDisposed) {
      // isolated-vm disposes of an isolate by itself only when its heap is over the limit.
      watch.broken = memoryLimitBroken(req);
    }
    const clean = !watch.broken && thrown === undefined && host?.outstanding() === 0;
    settleIsolate(req, prepared, ctx, clean);
  }
  return outcomeOf(req, stats(cpuTimeMs), watch.broken, thrown, resultJson);
}

/** Runs the script through the prelude (`run` or `start`): its promise's result, copied out as JSON text. */
async function runScript(
  ctx: RunContext,
  args: Parameters<RunContext['control']['apply']>[1],
): Promise<string> {
  return (await ctx.control.apply(undefined, args, { result: { promise: true, copy: true } })) as string;
}

/** What a run has logged so far, within its limits. */
interface RunLog {
  logs: FunctionLog[];
  dropped: number;
  chars: number;
}

interface HostBindings {
  refs: [ivm.Reference, ivm.Reference, ivm.Reference];
  outstanding: () => number;
}

/**
 * The host functions a run's prelude calls (host call, log, sleep), and how many of their promises have
 * not settled yet (calls, sleeps): an isolate with any left is not reused.
 */
function hostBindings(req: SandboxRequest, log: RunLog): HostBindings {
  let outstanding = 0;
  const counted = <T>(promise: Promise<T>): Promise<T> => {
    outstanding++;
    return promise.finally(() => outstanding--);
  };
  const hostCallRef = new ivm.Reference((name: unknown, args: unknown) => {
    // The prelude sends [argsJson] or [data], copied (see hostCallArgs); anything else is a tampered sandbox.
    const sent = hostCallArgs(args);
    if (typeof name !== 'string' || sent === undefined) {
      return Promise.resolve(
        JSON.stringify({
          ok: false,
          error: {
            code: 'invalid_arguments',
            message: 'a host call must send its arguments as JSON text or as an object of plain data',
          },
        }),
      );
    }
    return counted(req.hostCall(name, sent));
  });
  const hostLogRef = new ivm.Reference((level: FunctionLog['level'], message: string) => {
    if (log.logs.length >= req.limits.logLines || log.chars + message.length > req.limits.logTotalChars) {
      log.dropped++;
      return;
    }
    log.chars += message.length;
    log.logs.push({ level, message, at: new Date().toISOString() });
  });
  const hostSleepRef = new ivm.Reference((ms: number) =>
    counted(
      new Promise<void>((resolve) => {
        // Never past the wall clock (the isolate is gone then); unref'd so it holds nothing up.
        setTimeout(resolve, Math.min(ms, req.limits.wallTimeMs)).unref();
      }),
    ),
  );
  return { refs: [hostCallRef, hostLogRef, hostSleepRef], outstanding: () => outstanding };
}

/** What the prelude knows of the run (`nango.connectionId`, `nango.lastSyncDate`, its limits, ...). */
function runMeta(req: SandboxRequest): string {
  return JSON.stringify({
    type: req.type,
    connectionId: req.connectionId,
    providerConfigKey: req.providerConfigKey,
    provider: req.provider,
    invocationId: req.invocationId,
    variant: req.variant,
    entry: req.entry ?? 'exec',
    lastSyncDate: req.lastSyncDate ?? null,
    attributes: req.attributes ?? {},
    outputLimitBytes: req.limits.outputBytes,
    logLineChars: req.limits.logLineChars,
  });
}

/** Evaluates the bundle's module top level in the run's context; a bundle that does not compile is named. */
async function loadBundle(
  prepared: PreparedIsolate,
  ctx: RunContext,
  req: SandboxRequest,
): Promise<string | undefined> {
  let bundle: ivm.Script;
  try {
    bundle = await isolates.bundleIn(prepared, req.code, req.name);
  } catch (error) {
    return `the bundle does not compile: ${(error as Error).message}`;
  }
  await bundle.run(ctx.context);
  return undefined;
}

function memoryLimitBroken(req: SandboxRequest): BrokenLimit {
  return {
    code: 'script_memory_limit',
    message: `the function used more than ${req.limits.memoryMb} MB of memory`,
  };
}

/** A run's isolate afterwards: back to the pool if the run ended cleanly and it may serve more, else disposed. */
function settleIsolate(
  req: SandboxRequest,
  prepared: PreparedIsolate,
  ctx: RunContext,
  clean: boolean,
): void {
  if (prepared.isolate.isDisposed) return;
  if (req.poolKey !== undefined && clean && prepared.runs < MAX_RUNS_PER_ISOLATE) {
    pool.giveBack(req.poolKey, prepared, ctx, { code: req.code, name: req.name });
  } else prepared.isolate.dispose();
}

/** The run's answer: the limit it broke, what it threw, or its result. */
function outcomeOf(
  req: SandboxRequest,
  stats: Omit<SandboxOutcome, 'status' | 'error' | 'outputJson'>,
  broken: BrokenLimit | undefined,
  thrown: unknown,
  resultJson: string | undefined,
): SandboxOutcome {
  if (broken) return { status: 'failure', error: broken, ...stats };
  if (thrown !== undefined || resultJson === undefined) {
    const message = thrown instanceof Error ? thrown.message : String(thrown);
    if (/memory limit/i.test(message)) {
      return { status: 'failure', error: memoryLimitBroken(req), ...stats };
    }
    return { status: 'failure', error: { code: 'script_runtime_error', message }, ...stats };
  }
  return { ...parseResult(resultJson), ...stats } as SandboxOutcome;
}
