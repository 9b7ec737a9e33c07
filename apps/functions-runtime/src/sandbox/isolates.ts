import { Logger } from '@nestjs/common';
import ivm from 'isolated-vm';
import { readBuildOutput } from './build-output';
import { CodeCache, sourceKey } from './code-cache';
import { hostCrypto } from './host-crypto';
import { preludeSource } from './prelude';

const logger = new Logger('Sandbox');

/**
 * The library every isolate gets (zod, URL, URLSearchParams, Buffer): `dist/sandbox-lib.js`, built by
 * `scripts/build-sandbox-lib.mjs`, with V8's code cache for it made once per process, so a new isolate
 * compiles it without parsing (~15 ms to a ready context instead of ~50 ms; README). This file sits one
 * folder below both `src/` and `dist/`, so the same relative path finds the library from either.
 * (isolated-vm's heap snapshots would be as fast, but its author advises against them: V8 may crash a
 * process whose isolates start from different snapshots.)
 */
export interface SandboxLibrary {
  source: string;
  cachedData?: ivm.ExternalCopy<ArrayBuffer>;
}

const ZOD_WARM_UP = `{
  const z = __sandboxLib.zod();
  const schema = z.object({ a: z.string(), n: z.array(z.number()).optional(), o: z.object({ x: z.boolean() }).optional() });
  schema.safeParse({ a: 'x', n: [1], o: { x: true } });
  schema.safeParse({ a: 1 });
}`;

/** An isolate with a context and the library evaluated in it, not yet given to any run. */
export interface PreparedIsolate {
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
export interface RunContext {
  context: ivm.Context;
  control: ivm.Reference<(op: string, ...args: unknown[]) => unknown>;
  /** The bundle's module top level was evaluated already (ahead of the run). */
  bundleLoaded: boolean;
  /** Isolate CPU that top level used: charged to the run, as it would have been had it run in it. */
  loadCpuMs: number;
  /** The context's synchronous crypto callback (host-crypto.ts), released with the context. */
  crypto: ivm.Reference<typeof hostCrypto>;
}

export function releaseContext(ctx: RunContext): void {
  try {
    ctx.control.release();
    ctx.crypto.release();
    ctx.context.release();
  } catch {
    // the isolate was disposed of meanwhile, and its contexts with it
  }
}

export function disposeIsolate(prepared: PreparedIsolate): void {
  if (!prepared.isolate.isDisposed) prepared.isolate.dispose();
}

/**
 * Makes isolates and their contexts: the library (loaded once), the prelude and the bundles, compiled
 * through V8's code cache. One per process (sandbox.ts); `dispose` drops the code cache.
 */
export class IsolateFactory {
  private loaded: SandboxLibrary | undefined;
  private readonly codeCache = new CodeCache();

  library(): SandboxLibrary {
    if (!this.loaded) {
      const source = readBuildOutput('sandbox-lib.js');
      const scratch = new ivm.Isolate({ memoryLimit: 64 });
      try {
        const script = scratch.compileScriptSync(source, {
          filename: 'sandbox-lib.js',
          produceCachedData: true,
        });
        // Evaluated once here too, so a broken library fails the boot rather than every run.
        script.runSync(scratch.createContextSync());
        this.loaded = { source, cachedData: (script as ivm.Script & ivm.CachedDataResult).cachedData };
      } finally {
        scratch.dispose();
      }
    }
    return this.loaded;
  }

  async prepare(memoryMb: number): Promise<PreparedIsolate> {
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
      const lib = this.library();
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

  /** The prelude evaluated in a context that has the library: the host keeps the reference to its control. */
  async withPrelude(prepared: PreparedIsolate, context: ivm.Context): Promise<RunContext> {
    const prelude = await this.compiledIn(prepared, preludeSource(), 'switchboard-prelude.js');
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
  async newContext(prepared: PreparedIsolate, timeout?: number): Promise<RunContext> {
    const context = await prepared.isolate.createContext();
    try {
      await prepared.lib.run(context, timeout === undefined ? {} : { timeout });
      return await this.withPrelude(prepared, context);
    } catch (error) {
      context.release();
      throw error;
    }
  }

  /** The CommonJS bundle, wrapped so `module`, `exports` and `require` are the prelude's. */
  bundleIn(prepared: PreparedIsolate, code: string, name: string): Promise<ivm.Script> {
    return this.compiledIn(
      prepared,
      `globalThis.__factory = function (module, exports, require) {\n${code}\n};`,
      `function:${name}.js`,
    );
  }

  /** A script compiled once per isolate (from V8's code cache across isolates). */
  private async compiledIn(prepared: PreparedIsolate, source: string, filename: string): Promise<ivm.Script> {
    const key = sourceKey(source);
    const known = prepared.scripts.get(key);
    if (known) return known;
    const script = await this.codeCache.compile(prepared.isolate, source, filename, key);
    // A pooled isolate only ever runs one bundle (the pool key holds its version); bounded all the same.
    if (prepared.scripts.size < 8) prepared.scripts.set(key, script);
    return script;
  }

  dispose(): void {
    this.codeCache.dispose();
  }
}
