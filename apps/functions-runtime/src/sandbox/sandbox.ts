import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import type { FunctionFailureCode, FunctionLog, FunctionType } from '@switchboard/contracts';
import ivm from 'isolated-vm';
import { PRELUDE_SOURCE } from './prelude';

/** The limits one run gets, already capped by configuration. */
export interface RunLimits {
  memoryMb: number;
  cpuTimeMs: number;
  wallTimeMs: number;
  outputBytes: number;
  logLines: number;
  logLineChars: number;
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
  limits: RunLimits;
  /** Answers one host call with the JSON envelope the prelude expects; never rejects. */
  hostCall(name: string, argsJson: string): Promise<string>;
  /** Called once when the run's wall clock is up, so in-flight host calls stop. */
  onWallClock(): void;
}

export type SandboxOutcome = {
  logs: FunctionLog[];
  logsDropped: number;
  durationMs: number;
  cpuTimeMs: number;
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

interface PreludeFailure {
  status: 'failure';
  code: FunctionFailureCode;
  message: string;
  payload?: unknown;
  cause?: { code: string };
}

/** How often the CPU clock of a running isolate is read. */
const CPU_POLL_MS = 20;

/**
 * The bundle that every isolate starts from (zod, URL, URLSearchParams, Buffer), as a V8 heap snapshot
 * made once per process: a new isolate from it is ready in ~15 ms instead of ~100 ms (README).
 * `dist/sandbox-lib.js` is built by `scripts/build-sandbox-lib.mjs`; this file sits one folder below
 * both `src/` and `dist/`, so the same relative path finds it from either.
 */
let snapshot: ivm.ExternalCopy<ArrayBuffer> | undefined;
export function sandboxSnapshot(): ivm.ExternalCopy<ArrayBuffer> {
  if (!snapshot) {
    const lib = readFileSync(join(__dirname, '..', '..', 'dist', 'sandbox-lib.js'), 'utf8');
    snapshot = ivm.Isolate.createSnapshot([{ code: lib, filename: 'sandbox-lib.js' }]);
  }
  return snapshot;
}

const logger = new Logger('Sandbox');

/**
 * Runs one invocation in a fresh isolate and disposes of it: nothing of one run (heap, globals, timers)
 * is left for the next, so two environments never share a context. The isolate runs on its own thread;
 * this thread keeps serving host calls and watches the CPU and wall clocks, and disposing of the isolate
 * is what ends a run that breaks a limit.
 */
export async function runInSandbox(req: SandboxRequest): Promise<SandboxOutcome> {
  const started = performance.now();
  const logs: FunctionLog[] = [];
  let logsDropped = 0;
  let broken: { code: FunctionFailureCode; message: string } | undefined;

  const isolate = new ivm.Isolate({
    memoryLimit: req.limits.memoryMb,
    snapshot: sandboxSnapshot(),
    onCatastrophicError: (message) => {
      // isolated-vm: V8 lost control of an isolate; the process cannot be trusted to go on.
      logger.fatal(`isolated-vm catastrophic error: ${message}`);
      process.abort();
    },
  });
  // The last reading is kept: a disposed isolate has no clock left to read.
  let lastCpuMs = 0;
  const cpuMs = () => {
    if (!isolate.isDisposed) {
      try {
        lastCpuMs = Number(isolate.cpuTime) / 1e6;
      } catch {
        // disposed between the check and the read
      }
    }
    return lastCpuMs;
  };
  const end = (code: FunctionFailureCode, message: string) => {
    if (broken) return;
    broken = { code, message };
    req.onWallClock();
    if (!isolate.isDisposed) isolate.dispose();
  };
  const cpuWatch = setInterval(() => {
    if (!isolate.isDisposed && cpuMs() > req.limits.cpuTimeMs) {
      end('script_cpu_limit', `the function used more than ${req.limits.cpuTimeMs} ms of CPU time`);
    }
  }, CPU_POLL_MS);
  const wallWatch = setTimeout(() => {
    end('script_timeout', `the function ran longer than ${req.limits.wallTimeMs} ms`);
  }, req.limits.wallTimeMs);

  let resultJson: string | undefined;
  let thrown: unknown;
  let cpuTimeMs = 0;
  try {
    const context = await isolate.createContext();
    const global = context.global;
    await global.set(
      '__hostCall',
      new ivm.Reference((name: string, argsJson: string) => req.hostCall(name, argsJson)),
    );
    await global.set(
      '__hostLog',
      new ivm.Reference((level: FunctionLog['level'], message: string) => {
        if (logs.length >= req.limits.logLines) logsDropped++;
        else logs.push({ level, message, at: new Date().toISOString() });
      }),
    );
    await global.set(
      '__hostSleep',
      new ivm.Reference(
        (ms: number) =>
          new Promise<void>((resolve) => {
            // Never past the wall clock (the isolate is gone then); unref'd so it holds nothing up.
            setTimeout(resolve, Math.min(ms, req.limits.wallTimeMs)).unref();
          }),
      ),
    );
    await global.set(
      '__meta',
      JSON.stringify({
        type: req.type,
        connectionId: req.connectionId,
        providerConfigKey: req.providerConfigKey,
        provider: req.provider,
        invocationId: req.invocationId,
        variant: req.variant,
        outputLimitBytes: req.limits.outputBytes,
        logLineChars: req.limits.logLineChars,
      }),
    );
    await context.eval(PRELUDE_SOURCE, { filename: 'switchboard-prelude.js' });
    let bundle: ivm.Script;
    try {
      // The bundle is CommonJS: wrapped so `module`, `exports` and `require` are the prelude's.
      bundle = await isolate.compileScript(
        `globalThis.__factory = function (module, exports, require) {\n${req.code}\n};`,
        { filename: `function:${req.name}.js` },
      );
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
      };
      return outcome;
    }
    await bundle.run(context);
    const start = (await global.get('__start', { reference: true })) as ivm.Reference<
      (input: string | undefined) => Promise<string>
    >;
    resultJson = (await start.apply(
      undefined,
      [req.input === undefined ? undefined : JSON.stringify(req.input)],
      { result: { promise: true, copy: true } },
    )) as string;
  } catch (error) {
    thrown = error;
  } finally {
    clearInterval(cpuWatch);
    clearTimeout(wallWatch);
    cpuTimeMs = cpuMs();
    if (!broken && isolate.isDisposed) {
      // isolated-vm disposes of an isolate by itself only when its heap is over the limit.
      broken = {
        code: 'script_memory_limit',
        message: `the function used more than ${req.limits.memoryMb} MB of memory`,
      };
    }
    if (!isolate.isDisposed) isolate.dispose();
  }

  const stats = { logs, logsDropped, durationMs: performance.now() - started, cpuTimeMs };
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

/** The prelude's answer; a success keeps its output as the JSON text it already is (never parsed here). */
function parseResult(json: string) {
  const prefix = '{"status":"success"';
  if (json.startsWith(prefix)) {
    const withOutput = `${prefix},"output":`;
    return {
      status: 'success' as const,
      outputJson: json.startsWith(withOutput) ? json.slice(withOutput.length, -1) : undefined,
    };
  }
  const result = JSON.parse(json) as PreludeFailure;
  return {
    status: 'failure' as const,
    error: {
      code: result.code,
      message: result.message,
      ...(result.payload !== undefined ? { payload: result.payload } : {}),
      ...(result.cause !== undefined ? { cause: result.cause } : {}),
    },
  };
}
