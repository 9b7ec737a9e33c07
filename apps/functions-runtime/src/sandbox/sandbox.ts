import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import {
  FUNCTION_FAILURE_CODES,
  type FunctionFailureCode,
  type FunctionLog,
  type FunctionType,
} from '@switchboard/contracts';
import ivm from 'isolated-vm';
import { LRUCache } from 'lru-cache';
import { z } from 'zod';
import { hostCrypto } from './host-crypto';
import { preludeSource } from './prelude';

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

/** How often the CPU clock of a running isolate is read. */
const CPU_POLL_MS = 20;

/**
 * The library every isolate gets (zod, URL, URLSearchParams, Buffer): `dist/sandbox-lib.js`, built by
 * `scripts/build-sandbox-lib.mjs`, with V8's code cache for it made once per process, so a new isolate
 * compiles it without parsing (~15 ms to a ready context instead of ~50 ms; README). This file sits one
 * folder below both `src/` and `dist/`, so the same relative path finds the library from either.
 * (isolated-vm's heap snapshots would be as fast, but its author advises against them: V8 may crash a
 * process whose isolates start from different snapshots.)
 */
interface SandboxLibrary {
  source: string;
  cachedData?: ivm.ExternalCopy<ArrayBuffer>;
}
let library: SandboxLibrary | undefined;
export function sandboxLibrary(): SandboxLibrary {
  if (!library) {
    const source = readFileSync(join(__dirname, '..', '..', 'dist', 'sandbox-lib.js'), 'utf8');
    const scratch = new ivm.Isolate({ memoryLimit: 64 });
    try {
      const script = scratch.compileScriptSync(source, {
        filename: 'sandbox-lib.js',
        produceCachedData: true,
      });
      // Evaluated once here too, so a broken library fails the boot rather than every run.
      script.runSync(scratch.createContextSync());
      library = { source, cachedData: (script as ivm.Script & ivm.CachedDataResult).cachedData };
    } finally {
      scratch.dispose();
    }
  }
  return library;
}

const logger = new Logger('Sandbox');

const ZOD_WARM_UP = `{
  const z = __sandboxLib.zod();
  const schema = z.object({ a: z.string(), n: z.array(z.number()).optional(), o: z.object({ x: z.boolean() }).optional() });
  schema.safeParse({ a: 'x', n: [1], o: { x: true } });
  schema.safeParse({ a: 1 });
}`;

/** An isolate with a context and the library evaluated in it, not yet given to any run. */
interface PreparedIsolate {
  isolate: ivm.Isolate;
  /** A context with the library evaluated; undefined once a run used it (a reuse makes a new one). */
  context: ivm.Context | undefined;
  memoryMb: number;
  /** The library compiled in this isolate: a new context evaluates it again without compiling. */
  lib: ivm.Script;
  /** The prelude and bundle compiled in this isolate (a pooled isolate serves one function version). */
  scripts: Map<string, ivm.Script>;
  /** Runs this isolate has served. */
  runs: number;
  idleSince: number;
  /** While pooled: the next run's context, being made or made (undefined: the run makes its own). */
  next?: Promise<RunContext | undefined>;
  /** `next` has settled: a run taking this isolate starts at once. */
  nextSettled: boolean;
  /**
   * Whether a ready context evaluates the bundle's module top level too: false once a top level used a
   * run capability (log, timer, host call) or threw there, so this isolate's bundle loads in its runs.
   */
  loadAhead: boolean;
}

/** A context with the library and the prelude evaluated, and the host's reference to the prelude's control. */
interface RunContext {
  context: ivm.Context;
  control: ivm.Reference<(op: string, ...args: unknown[]) => unknown>;
  /** The bundle's module top level was evaluated already (ahead of the run). */
  bundleLoaded: boolean;
  /** Isolate CPU that top level used: charged to the run, as it would have been had it run in it. */
  loadCpuMs: number;
  /** The context's synchronous crypto callback (host-crypto.ts), released with the context. */
  crypto: ivm.Reference<typeof hostCrypto>;
}

async function prepareIsolate(memoryMb: number): Promise<PreparedIsolate> {
  const isolate = new ivm.Isolate({
    memoryLimit: memoryMb,
    onCatastrophicError: (message) => {
      // isolated-vm: V8 lost control of an isolate; the process cannot be trusted to go on.
      logger.fatal(`isolated-vm catastrophic error: ${message}`);
      process.abort();
    },
  });
  try {
    const context = await isolate.createContext();
    const lib = sandboxLibrary();
    const libScript = await isolate.compileScript(lib.source, {
      filename: 'sandbox-lib.js',
      ...(lib.cachedData ? { cachedData: lib.cachedData } : {}),
    });
    await libScript.run(context);
    // V8 compiles functions on their first call: one parse through zod's common paths here, off the
    // run's critical path, saves about a millisecond of every action's input/output validation. It
    // leaves nothing behind (no global is written).
    await context.eval(ZOD_WARM_UP, { filename: 'zod-warm-up.js' });
    return {
      isolate,
      context,
      memoryMb,
      lib: libScript,
      scripts: new Map(),
      runs: 0,
      idleSince: 0,
      nextSettled: false,
      loadAhead: true,
    };
  } catch (error) {
    if (!isolate.isDisposed) isolate.dispose();
    throw error;
  }
}

/**
 * Fresh isolates made ahead of need, so a run does not wait the ~15 ms an isolate and its library take
 * (README, "Isolates"). Each one still serves exactly one run and is disposed of after it: a spare has
 * run nothing but the library, so no state of one run reaches another. Spares are kept for the
 * configured memory limit only (a run that asks for less gets an isolate made for it); `configureSpares`
 * sets how many, 0 turns them off.
 */
const spares: PreparedIsolate[] = [];
let spareTarget = 0;
let spareMemoryMb = 0;
let refilling = false;

export function configureSpares(count: number, memoryMb: number): void {
  spareTarget = count;
  spareMemoryMb = memoryMb;
  while (spares.length > count) spares.pop()?.isolate.dispose();
  refillSpares();
}

function refillSpares(): void {
  if (refilling || spares.length >= spareTarget) return;
  refilling = true;
  // Made one at a time, after the run that took one has started: preparing never competes with a
  // run for more than one of the isolate threads.
  setImmediate(() => {
    prepareIsolate(spareMemoryMb)
      .then((prepared) => {
        if (spares.length < spareTarget && prepared.memoryMb === spareMemoryMb) spares.push(prepared);
        else prepared.isolate.dispose();
      })
      .catch((error: unknown) => logger.error(`could not prepare a spare isolate: ${String(error)}`))
      .finally(() => {
        refilling = false;
        if (spares.length < spareTarget) refillSpares();
      });
  });
}

/**
 * Isolates that served a run and may serve another run of the same pool key (environment and function
 * version), each time in a new context: the library, prelude and bundle are already compiled in them,
 * and V8 has already optimised what they run. Only an isolate whose run ended cleanly comes back here
 * (no limit broken, nothing of the run still pending on the host, heap well under its limit), and at most
 * `MAX_RUNS_PER_ISOLATE` runs share one. `configurePool` sets how many idle ones are kept in all (0: an
 * isolate per run); the least recently used go first, and any idle for `POOL_IDLE_MS` is disposed of.
 */
const pool = new Map<string, PreparedIsolate[]>();
let pooled = 0;
let poolTarget = 0;
const MAX_RUNS_PER_ISOLATE = 1000;
const POOL_IDLE_MS = 60_000;
/** A heap this full after a run is not handed on: the next run should not start near its limit. */
const POOL_MAX_HEAP_FRACTION = 0.5;
let poolSweep: NodeJS.Timeout | undefined;

export function configurePool(maxIdle: number): void {
  poolTarget = maxIdle;
  while (pooled > poolTarget) evictOldest();
  if (poolTarget > 0 && !poolSweep) {
    poolSweep = setInterval(() => {
      const now = Date.now();
      for (const [key, idle] of pool) {
        while (idle.length > 0 && now - idle[0]!.idleSince > POOL_IDLE_MS) {
          idle.shift()!.isolate.dispose();
          pooled--;
        }
        if (idle.length === 0) pool.delete(key);
      }
    }, 10_000);
    poolSweep.unref();
  }
}

/** Idle isolates kept right now (tests and metrics). */
export function pooledIsolates(): number {
  return pooled;
}

/** Isolates serving a run right now (with the pooled and spare ones: every isolate of the process). */
const running = new Set<ivm.Isolate>();

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
  const all = [
    ...running,
    ...spares.map((s) => s.isolate),
    ...[...pool.values()].flat().map((p) => p.isolate),
  ];
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

function evictOldest(): void {
  // Keys are re-inserted on use, so the first one is the least recently used.
  for (const [key, idle] of pool) {
    const oldest = idle.shift();
    if (idle.length === 0) pool.delete(key);
    if (oldest) {
      oldest.isolate.dispose();
      pooled--;
      return;
    }
  }
}

/** Takes an isolate out of its pool (one whose next context could not be made: it is being disposed of). */
function dropPooled(poolKey: string, prepared: PreparedIsolate): void {
  const idle = pool.get(poolKey);
  const at = idle?.indexOf(prepared) ?? -1;
  if (!idle || at < 0) return;
  idle.splice(at, 1);
  pooled--;
  if (idle.length === 0) pool.delete(poolKey);
}

/**
 * An idle isolate of the key: the most recently used one whose ready context is made, else (unless
 * `readyOnly`) the one whose context has been in the making longest (the first given back).
 */
function takePooled(poolKey: string, readyOnly = false): PreparedIsolate | undefined {
  const idle = pool.get(poolKey);
  if (!idle) return undefined;
  let at = idle.length - 1;
  if (readyContexts) {
    while (at >= 0 && !(idle[at]!.next && idle[at]!.nextSettled)) at--;
    if (at < 0) {
      if (readyOnly) return undefined;
      at = 0;
    }
  }
  const [found] = idle.splice(at, 1);
  pooled--;
  if (idle.length === 0) pool.delete(poolKey);
  return found;
}

function givePooled(poolKey: string, prepared: PreparedIsolate): void {
  if (poolTarget <= 0) {
    prepared.isolate.dispose();
    return;
  }
  while (pooled >= poolTarget) evictOldest();
  prepared.idleSince = Date.now();
  const idle = pool.get(poolKey) ?? [];
  pool.delete(poolKey);
  idle.push(prepared);
  pool.set(poolKey, idle);
  pooled++;
}

/** Ready contexts on (the default) or off: `scripts/measure-runs.mjs` compares both in one process. */
let readyContexts = true;
export function configureReadyContexts(on: boolean): void {
  readyContexts = on;
}

/**
 * How long making a ready context may take: a module top level that loops or waits is stopped, the
 * context dropped, and the isolate disposed of (the next run of its key gets a new one).
 */
const PREPARE_TIMEOUT_MS = 1000;

/** How many isolates of a key may be in the making (none ready) for a run to take a spare rather than wait. */
const SPARE_FIRST_BELOW = 3;

/** The prelude evaluated in a context that has the library: the host keeps the reference to its control. */
async function withPrelude(prepared: PreparedIsolate, context: ivm.Context): Promise<RunContext> {
  const prelude = await compiledIn(prepared, preludeSource(), 'switchboard-prelude.js');
  // Not run-specific (bytes in, bytes out): the prelude takes it off the global object as it does the library.
  const crypto = new ivm.Reference(hostCrypto);
  try {
    await context.global.set('__hostCrypto', crypto);
    const control = (await prelude.run(context, { reference: true })) as RunContext['control'];
    return { context, control, bundleLoaded: false, loadCpuMs: 0, crypto };
  } catch (error) {
    crypto.release();
    throw error;
  }
}

/**
 * A new context in an isolate: a new global object and new built-ins, so nothing an earlier run left on
 * its globals or prototypes is reachable from this one; the library and the prelude evaluated in it.
 */
async function newContext(prepared: PreparedIsolate, timeout?: number): Promise<RunContext> {
  const context = await prepared.isolate.createContext();
  try {
    await prepared.lib.run(context, timeout === undefined ? {} : { timeout });
    return await withPrelude(prepared, context);
  } catch (error) {
    context.release();
    throw error;
  }
}

function releaseContext(ctx: RunContext): void {
  try {
    ctx.control.release();
    ctx.crypto.release();
    ctx.context.release();
  } catch {
    // the isolate was disposed of meanwhile, and its contexts with it
  }
}

/** The CommonJS bundle, wrapped so `module`, `exports` and `require` are the prelude's. */
function bundleIn(prepared: PreparedIsolate, code: string, name: string): Promise<ivm.Script> {
  return compiledIn(
    prepared,
    `globalThis.__factory = function (module, exports, require) {\n${code}\n};`,
    `function:${name}.js`,
  );
}

/**
 * The next run's context, made while the isolate waits in its pool, off any run's path ("ready
 * contexts", README "Isolates"): the library, the prelude, the library parts the last run used (zod,
 * URL, Buffer: a version that never touches zod never pays for it) and the bundle's module top level.
 * Nothing of any run is in it: the run binds its own host references and metadata in one call when it
 * takes the isolate. The last run's context is released here, after its library use is read.
 */
async function prepareNext(
  poolKey: string,
  prepared: PreparedIsolate,
  last: RunContext,
  bundle: { code: string; name: string },
): Promise<RunContext | undefined> {
  await new Promise((resolve) => setImmediate(resolve));
  let used = '';
  try {
    // A closure of the prelude reading the library's own state, not the script's; checked all the same.
    const answer = await last.control.apply(undefined, ['used'], { timeout: PREPARE_TIMEOUT_MS });
    if (typeof answer === 'string' && /^[A-Za-z,]{0,64}$/.test(answer)) used = answer;
  } catch {
    // the library use is only a hint
  }
  releaseContext(last);
  const { isolate } = prepared;
  const attempt = async (loadBundle: boolean): Promise<RunContext> => {
    const ctx = await newContext(prepared, PREPARE_TIMEOUT_MS);
    try {
      if (used !== '') {
        await ctx.control.apply(undefined, ['warm', used], { timeout: PREPARE_TIMEOUT_MS });
      }
      if (loadBundle) {
        const script = await bundleIn(prepared, bundle.code, bundle.name);
        const before = Number(isolate.cpuTime) / 1e6;
        await script.run(ctx.context, { timeout: PREPARE_TIMEOUT_MS });
        const loaded = await ctx.control.apply(undefined, ['load'], { timeout: PREPARE_TIMEOUT_MS });
        ctx.loadCpuMs = Number(isolate.cpuTime) / 1e6 - before;
        if (loaded !== 'ok') throw new NotAheadError();
        ctx.bundleLoaded = true;
      }
      return ctx;
    } catch (error) {
      releaseContext(ctx);
      throw error;
    }
  };
  try {
    if (isolate.isDisposed) return undefined;
    if (!prepared.loadAhead) return await attempt(false);
    try {
      return await attempt(true);
    } catch (error) {
      if (!(error instanceof NotAheadError) || isolate.isDisposed) throw error;
      // The top level wants its run (or threw): it runs in its runs, after they bind, as before.
      prepared.loadAhead = false;
      return await attempt(false);
    }
  } catch (error) {
    // A timeout, the memory limit, a bundle that no longer compiles: this isolate serves no more runs.
    if (!isolate.isDisposed) {
      logger.warn(
        `could not make a ready context: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    dropPooled(poolKey, prepared);
    if (!isolate.isDisposed) isolate.dispose();
    return undefined;
  }
}

class NotAheadError extends Error {}

async function isolateFor(
  memoryMb: number,
  poolKey: string | undefined,
): Promise<{ prepared: PreparedIsolate; ctx: RunContext; reused: boolean; ready: boolean }> {
  let reused = poolKey === undefined ? undefined : takePooled(poolKey, true);
  const back = poolKey === undefined ? undefined : returning.get(poolKey);
  if (!reused && back) {
    // An isolate of the key is on its way back (its heap being read): as good as pooled.
    await Promise.all(back);
    reused = takePooled(poolKey!, true);
  }
  // No ready context of the key and few in the making (few runs of it at a time): a spare isolate
  // (library evaluated, zod's common paths compiled) starts this run sooner than waiting would, and then
  // joins the pool, so that runs one after another take turns on a few isolates, each made ready while
  // the others serve. With more of the key's isolates in the making, the oldest is awaited.
  const spareFirst =
    !reused && poolKey !== undefined && readyContexts && memoryMb === spareMemoryMb && spares.length > 0;
  if (
    !reused &&
    poolKey !== undefined &&
    !(spareFirst && (pool.get(poolKey)?.length ?? 0) < SPARE_FIRST_BELOW)
  ) {
    reused = takePooled(poolKey);
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
        return { prepared: reused, ctx: await newContext(reused), reused: true, ready: false };
      } catch (error) {
        if (!reused.isolate.isDisposed) reused.isolate.dispose();
        throw error;
      }
    }
    // Disposed of while its context was made (it could not be): a new isolate, as for a first run.
  }
  const spare = memoryMb === spareMemoryMb ? spares.shift() : undefined;
  refillSpares();
  const prepared = spare ?? (await prepareIsolate(memoryMb));
  const context = prepared.context!;
  prepared.context = undefined;
  try {
    return { prepared, ctx: await withPrelude(prepared, context), reused: false, ready: false };
  } catch (error) {
    if (!prepared.isolate.isDisposed) prepared.isolate.dispose();
    throw error;
  }
}

/** A script compiled once per isolate (from V8's code cache across isolates). */
async function compiledIn(prepared: PreparedIsolate, source: string, filename: string): Promise<ivm.Script> {
  const key = createHash('sha256').update(source).digest('hex');
  const known = prepared.scripts.get(key);
  if (known) return known;
  const script = await compileCached(prepared.isolate, source, filename, key);
  // A pooled isolate only ever runs one bundle (the pool key holds its version); bounded all the same.
  if (prepared.scripts.size < 8) prepared.scripts.set(key, script);
  return script;
}

/**
 * V8's code cache for the prelude and for recently run bundles (by content): a new isolate then
 * compiles them without parsing. Cached data is bytecode of code the runtime was handed anyway; V8
 * checks it against the source and ignores it when it does not match.
 */
const codeCache = new LRUCache<string, { data: ivm.ExternalCopy<ArrayBuffer>; bytes: number }>({
  max: 500,
  // Bytecode is of the order of its source's size; the source length bounds the cache well enough.
  maxSize: 64 * 1024 * 1024,
  sizeCalculation: (entry) => Math.max(1, entry.bytes),
});

async function compileCached(
  isolate: ivm.Isolate,
  source: string,
  filename: string,
  key = createHash('sha256').update(source).digest('hex'),
): Promise<ivm.Script> {
  const cached = codeCache.get(key);
  if (cached) return isolate.compileScript(source, { filename, cachedData: cached.data });
  const script = await isolate.compileScript(source, { filename, produceCachedData: true });
  const produced = (script as ivm.Script & ivm.CachedDataResult).cachedData;
  if (produced) codeCache.set(key, { data: produced, bytes: source.length });
  return script;
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
  const logs: FunctionLog[] = [];
  let logsDropped = 0;
  let logChars = 0;
  let broken: { code: FunctionFailureCode; message: string } | undefined;

  const taken = await isolateFor(req.limits.memoryMb, req.poolKey);
  const { prepared, reused } = taken;
  let { ctx, ready } = taken;
  const { isolate } = prepared;
  prepared.runs++;
  running.add(isolate);
  // Host promises of this run not settled yet (calls, sleeps): an isolate with any left is not reused.
  let outstanding = 0;
  const counted = <T>(promise: Promise<T>): Promise<T> => {
    outstanding++;
    return promise.finally(() => outstanding--);
  };
  // A spare's clock already holds the library's evaluation: the run is charged from here on, and for its
  // bundle's module top level if a ready context evaluated it ahead of the run.
  let cpuAtStart = Number(isolate.cpuTime) / 1e6 - ctx.loadCpuMs;
  // The last reading is kept: a disposed isolate has no clock left to read.
  let lastCpuMs = 0;
  const cpuMs = () => {
    if (!isolate.isDisposed) {
      try {
        lastCpuMs = Number(isolate.cpuTime) / 1e6 - cpuAtStart;
      } catch {
        // disposed between the check and the read
      }
    }
    return lastCpuMs;
  };
  const end = (code: FunctionFailureCode, message: string) => {
    // During the abort grace the answer is already script_timeout; a limit broken then still ends it.
    broken ??= { code, message };
    req.onWallClock();
    if (!isolate.isDisposed) isolate.dispose();
  };
  const cpuWatch = setInterval(() => {
    if (!isolate.isDisposed && cpuMs() > req.limits.cpuTimeMs) {
      end('script_cpu_limit', `the function used more than ${req.limits.cpuTimeMs} ms of CPU time`);
    }
  }, CPU_POLL_MS);
  let graceWatch: NodeJS.Timeout | undefined;
  /** The wall clock, or a stop from outside: the script gets the abort grace to react, then it is disposed. */
  const windDown = (code: FunctionFailureCode, message: string) => {
    if (broken) return;
    if (req.limits.abortGraceMs <= 0 || isolate.isDisposed) {
      end(code, message);
      return;
    }
    // The answer is decided now; the script only gets a moment to react to its abortSignal.
    broken = { code, message };
    req.onWallClock();
    ctx.control
      .apply(undefined, ['abort', message], { timeout: req.limits.abortGraceMs })
      .catch(() => undefined);
    graceWatch = setTimeout(() => {
      if (!isolate.isDisposed) isolate.dispose();
    }, req.limits.abortGraceMs);
  };
  const wallWatch = setTimeout(
    () => windDown('script_timeout', `the function ran longer than ${req.limits.wallTimeMs} ms`),
    req.limits.wallTimeMs,
  );
  const onAbort = () =>
    windDown('script_aborted', `the run was stopped: ${String(req.abort?.reason ?? 'cancelled')}`);
  req.abort?.addEventListener('abort', onAbort, { once: true });
  if (req.abort?.aborted) onAbort();

  let resultJson: string | undefined;
  let thrown: unknown;
  let cpuTimeMs = 0;
  try {
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
      if (logs.length >= req.limits.logLines || logChars + message.length > req.limits.logTotalChars) {
        logsDropped++;
        return;
      }
      logChars += message.length;
      logs.push({ level, message, at: new Date().toISOString() });
    });
    const hostSleepRef = new ivm.Reference((ms: number) =>
      counted(
        new Promise<void>((resolve) => {
          // Never past the wall clock (the isolate is gone then); unref'd so it holds nothing up.
          setTimeout(resolve, Math.min(ms, req.limits.wallTimeMs)).unref();
        }),
      ),
    );
    const meta = JSON.stringify({
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
    // The run's bindings, in one call: the prelude keeps them in its closures (no global holds them).
    const bind = () => ctx.control.apply(undefined, ['bind', hostCallRef, hostLogRef, hostSleepRef, meta]);
    const inputJson = req.input === undefined ? undefined : JSON.stringify(req.input);
    const start = () =>
      ctx.control.apply(undefined, ['start', inputJson], {
        result: { promise: true, copy: true },
      }) as Promise<string>;
    // The ready context's module top level used a run capability (or the bundle reached code that did):
    // the run starts over on a new context, where the top level runs after the bindings, as before.
    const startOver = async () => {
      prepared.loadAhead = false;
      releaseContext(ctx);
      cpuAtStart += ctx.loadCpuMs;
      ctx = await newContext(prepared);
      ready = false;
      if ((await bind()) !== 'ok') throw new Error('the sandbox prelude did not take the run');
    };
    if (ready && ctx.bundleLoaded) {
      // A ready context: bound and started in one crossing into the isolate (prelude/index.ts, `run`).
      resultJson = (await ctx.control.apply(
        undefined,
        ['run', hostCallRef, hostLogRef, hostSleepRef, meta, inputJson],
        { result: { promise: true, copy: true } },
      )) as string;
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
        let bundle: ivm.Script;
        try {
          bundle = await bundleIn(prepared, req.code, req.name);
        } catch (error) {
          const outcome: SandboxOutcome = {
            status: 'failure',
            error: {
              code: 'script_load_error',
              message: `the bundle does not compile: ${(error as Error).message}`,
            },
            logs,
            logsDropped,
            durationMs: performance.now() - started,
            cpuTimeMs: cpuMs(),
            reusedIsolate: reused,
            readyContext: ready,
          };
          return outcome;
        }
        await bundle.run(ctx.context);
      }
      resultJson = await start();
    }
  } catch (error) {
    thrown = error;
  } finally {
    running.delete(isolate);
    clearInterval(cpuWatch);
    clearTimeout(wallWatch);
    req.abort?.removeEventListener('abort', onAbort);
    clearTimeout(graceWatch);
    cpuTimeMs = cpuMs();
    if (!broken && isolate.isDisposed) {
      // isolated-vm disposes of an isolate by itself only when its heap is over the limit.
      broken = {
        code: 'script_memory_limit',
        message: `the function used more than ${req.limits.memoryMb} MB of memory`,
      };
    }
    if (!isolate.isDisposed) {
      if (
        req.poolKey !== undefined &&
        !broken &&
        thrown === undefined &&
        outstanding === 0 &&
        prepared.runs < MAX_RUNS_PER_ISOLATE
      ) {
        giveBack(req.poolKey, prepared, ctx, { code: req.code, name: req.name });
      } else isolate.dispose();
    }
  }

  const stats = {
    logs,
    logsDropped,
    durationMs: performance.now() - started,
    cpuTimeMs,
    reusedIsolate: reused,
    readyContext: ready,
  };
  if (broken) return { status: 'failure', error: broken, ...stats };
  if (thrown !== undefined || resultJson === undefined) {
    const message = thrown instanceof Error ? thrown.message : String(thrown);
    if (/memory limit/i.test(message)) {
      return {
        status: 'failure',
        error: {
          code: 'script_memory_limit',
          message: `the function used more than ${req.limits.memoryMb} MB of memory`,
        },
        ...stats,
      };
    }
    return { status: 'failure', error: { code: 'script_runtime_error', message }, ...stats };
  }
  return { ...parseResult(resultJson), ...stats } as SandboxOutcome;
}

/**
 * What a script sent with a host call, as the prelude sends it: the one element of an array passed with
 * `arguments: { copy: true }`, so isolated-vm serialises it and this process gets values of its own V8
 * heap. That element is the arguments' JSON text, or, for the records writes, the arguments themselves
 * when the prelude found them to be plain JSON data (prelude/plain-data.ts). Which calls take data is
 * the dispatcher's to say (`HostCall.takesData`); the arguments are untrusted either way.
 *
 * A string passed bare would arrive, when over 1 KB, as an external string over isolated-vm's own copy: V8
 * counts neither its bytes towards any collection trigger nor collects it before a full collection
 * (external strings are made in the old generation), so each ~1 MB batch a sync saved stayed in the
 * process until something else caused a full GC. And the JSON text of a batch, parsed here, put every
 * short string value (up to 10 characters: most ids) into V8's string table, which also only a full
 * collection empties; a structured copy's strings are ordinary young ones (bench/README.md, "Why the current settings").
 */
export type HostCallArgs = { json: string } | { data: object };

function hostCallArgs(args: unknown): HostCallArgs | undefined {
  if (!Array.isArray(args) || args.length !== 1) return undefined;
  const [sent] = args as unknown[];
  if (typeof sent === 'string') return { json: sent };
  if (typeof sent === 'object' && sent !== null && !Array.isArray(sent)) return { data: sent };
  return undefined;
}

/**
 * Isolates whose run just ended cleanly, by pool key, while their heap is read: only one well under its
 * limit goes back to the pool (and gets its next ready context). The heap is read with isolated-vm's
 * asynchronous call, after the run has answered: the synchronous one blocked this thread until it got the
 * isolate's lock, on every run's path (bench/README.md, "Why the current settings").
 */
const returning = new Map<string, Set<Promise<void>>>();

function giveBack(
  poolKey: string,
  prepared: PreparedIsolate,
  ctx: RunContext,
  bundle: { code: string; name: string },
): void {
  const { isolate } = prepared;
  const back = isolate.getHeapStatistics().then(
    (heap) => {
      // What isolated-vm counts against the limit: the V8 heap and the strings and buffers the host copied in.
      const used = heap.used_heap_size + heap.externally_allocated_size;
      if (isolate.isDisposed || used >= prepared.memoryMb * 1024 * 1024 * POOL_MAX_HEAP_FRACTION) {
        if (!isolate.isDisposed) isolate.dispose();
        return;
      }
      givePooled(poolKey, prepared);
      if (isolate.isDisposed) releaseContext(ctx);
      else if (readyContexts) {
        prepared.nextSettled = false;
        // Never rejects (a failure drops the isolate), so no run awaiting it is ever thrown at.
        prepared.next = prepareNext(poolKey, prepared, ctx, bundle)
          .catch(() => undefined)
          .finally(() => (prepared.nextSettled = true));
      } else {
        releaseContext(ctx);
      }
    },
    () => {
      if (!isolate.isDisposed) isolate.dispose();
    },
  );
  const pending = returning.get(poolKey) ?? new Set<Promise<void>>();
  returning.set(poolKey, pending);
  pending.add(back);
  void back.finally(() => {
    pending.delete(back);
    if (pending.size === 0 && returning.get(poolKey) === pending) returning.delete(poolKey);
  });
}

/** Resolves once every isolate whose run has ended is back in its pool or disposed of (tests). */
export async function isolatesReturned(): Promise<void> {
  await Promise.all([...returning.values()].flatMap((pending) => [...pending]));
}

const preludeFailureSchema = z.object({
  status: z.literal('failure'),
  code: z.enum(FUNCTION_FAILURE_CODES),
  message: z.string().max(64 * 1024),
  payload: z.unknown().optional(),
  cause: z.object({ code: z.string().max(128) }).optional(),
});

/**
 * The prelude's answer. It comes out of the isolate, where the script may have tampered with the globals
 * the prelude uses (JSON, String.prototype, ...), so it is checked like any untrusted input; a success
 * keeps its output as the JSON text it is (parsed once, by the caller).
 */
function parseResult(json: string) {
  const prefix = '{"status":"success"';
  if (json.startsWith(prefix)) {
    const withOutput = `${prefix},"output":`;
    return {
      status: 'success' as const,
      outputJson: json.startsWith(withOutput) ? json.slice(withOutput.length, -1) : undefined,
    };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    parsed = undefined;
  }
  const result = preludeFailureSchema.safeParse(parsed);
  if (!result.success) {
    return {
      status: 'failure' as const,
      error: {
        code: 'script_runtime_error' as const,
        message: 'the function ended with an unreadable result',
      },
    };
  }
  const { code, message, payload, cause } = result.data;
  return {
    status: 'failure' as const,
    error: {
      code,
      message,
      ...(payload !== undefined ? { payload } : {}),
      ...(cause !== undefined ? { cause } : {}),
    },
  };
}
