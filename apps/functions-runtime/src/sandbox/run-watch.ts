import type { FunctionFailureCode } from '@switchboard/contracts';
import type ivm from 'isolated-vm';
import type { RunContext } from './isolates';

/** How often the CPU clock of a running isolate is read. */
const CPU_POLL_MS = 20;

/** What the clocks watch of a run (its SandboxRequest): its limits, whom to tell, and its outside stop. */
export interface WatchedRun {
  limits: { cpuTimeMs: number; wallTimeMs: number; abortGraceMs: number };
  /** Called when the wall clock is up, the run is stopped or a limit is broken. */
  onWallClock(): void;
  abort?: AbortSignal;
}

export interface BrokenLimit {
  code: FunctionFailureCode;
  message: string;
}

/**
 * One run's CPU and wall clocks and its stop from outside. A broken CPU limit disposes of the isolate at
 * once; the wall clock and a stop give the script the abort grace to react to its abortSignal first. The
 * first limit broken is the run's answer (`broken`).
 */
export class RunWatch {
  broken: BrokenLimit | undefined;
  /** Where the run's CPU clock starts, in the isolate's clock (moves when the run starts over). */
  cpuAtStart: number;
  /** The last reading is kept: a disposed isolate has no clock left to read. */
  private lastCpuMs = 0;
  private graceWatch: NodeJS.Timeout | undefined;
  private readonly cpuWatch: NodeJS.Timeout;
  private readonly wallWatch: NodeJS.Timeout;
  private readonly onAbort = () =>
    this.windDown('script_aborted', `the run was stopped: ${String(this.run.abort?.reason ?? 'cancelled')}`);

  constructor(
    private readonly isolate: ivm.Isolate,
    /** The run's context now (a run that starts over gets a new one). */
    private readonly ctx: () => RunContext,
    private readonly run: WatchedRun,
  ) {
    const { limits, abort } = run;
    // A spare's clock already holds the library's evaluation: the run is charged from here on, and for its
    // bundle's module top level if a ready context evaluated it ahead of the run.
    this.cpuAtStart = Number(isolate.cpuTime) / 1e6 - ctx().loadCpuMs;
    this.cpuWatch = setInterval(() => {
      if (!isolate.isDisposed && this.cpuMs() > limits.cpuTimeMs) {
        this.end('script_cpu_limit', `the function used more than ${limits.cpuTimeMs} ms of CPU time`);
      }
    }, CPU_POLL_MS);
    this.wallWatch = setTimeout(
      () => this.windDown('script_timeout', `the function ran longer than ${limits.wallTimeMs} ms`),
      limits.wallTimeMs,
    );
    abort?.addEventListener('abort', this.onAbort, { once: true });
    if (abort?.aborted) this.onAbort();
  }

  cpuMs(): number {
    if (!this.isolate.isDisposed) {
      try {
        this.lastCpuMs = Number(this.isolate.cpuTime) / 1e6 - this.cpuAtStart;
      } catch {
        // disposed between the check and the read
      }
    }
    return this.lastCpuMs;
  }

  /** The run is over: no clock fires any more. */
  stop(): void {
    clearInterval(this.cpuWatch);
    clearTimeout(this.wallWatch);
    this.run.abort?.removeEventListener('abort', this.onAbort);
    clearTimeout(this.graceWatch);
  }

  private end(code: FunctionFailureCode, message: string): void {
    // During the abort grace the answer is already script_timeout; a limit broken then still ends it.
    this.broken ??= { code, message };
    this.run.onWallClock();
    if (!this.isolate.isDisposed) this.isolate.dispose();
  }

  /** The wall clock, or a stop from outside: the script gets the abort grace to react, then it is disposed. */
  private windDown(code: FunctionFailureCode, message: string): void {
    if (this.broken) return;
    const graceMs = this.run.limits.abortGraceMs;
    if (graceMs <= 0 || this.isolate.isDisposed) {
      this.end(code, message);
      return;
    }
    // The answer is decided now; the script only gets a moment to react to its abortSignal.
    this.broken = { code, message };
    this.run.onWallClock();
    this.ctx()
      .control.apply(undefined, ['abort', message], { timeout: graceMs })
      .catch(() => undefined);
    this.graceWatch = setTimeout(() => {
      if (!this.isolate.isDisposed) this.isolate.dispose();
    }, graceMs);
  }
}
