import { Logger } from '@nestjs/common';
import type ivm from 'isolated-vm';
import {
  disposeIsolate,
  releaseContext,
  type IsolateFactory,
  type PreparedIsolate,
  type RunContext,
} from './isolates';

const logger = new Logger('Sandbox');

/** Most runs one isolate serves. */
export const MAX_RUNS_PER_ISOLATE = 1000;
const POOL_IDLE_MS = 60_000;
const SWEEP_EVERY_MS = 10_000;
/** A heap this full after a run is not handed on: the next run should not start near its limit. */
const POOL_MAX_HEAP_FRACTION = 0.5;
/**
 * How long making a ready context may take: a module top level that loops or waits is stopped, the
 * context dropped, and the isolate disposed of (the next run of its key gets a new one).
 */
export const PREPARE_TIMEOUT_MS = 1000;

class NotAheadError extends Error {}

/**
 * Isolates that served a run and may serve another run of the same pool key (environment and function
 * version), each time in a new context: the library, prelude and bundle are already compiled in them,
 * and V8 has already optimised what they run. Only an isolate whose run ended cleanly comes back here
 * (no limit broken, nothing of the run still pending on the host, heap well under its limit), and at most
 * `MAX_RUNS_PER_ISOLATE` runs share one. `configure` sets how many idle ones are kept in all (0: an
 * isolate per run); the least recently used go first, and any idle for `POOL_IDLE_MS` is disposed of.
 * `dispose` empties the pool and stops its sweep.
 */
export class IsolatePool {
  private readonly idle = new Map<string, PreparedIsolate[]>();
  private count = 0;
  private target = 0;
  private sweep: NodeJS.Timeout | undefined;
  /**
   * Isolates whose run just ended cleanly, by pool key, while their heap is read: only one well under its
   * limit goes back to the pool (and gets its next ready context). The heap is read with isolated-vm's
   * asynchronous call, after the run has answered: the synchronous one blocked this thread until it got
   * the isolate's lock, on every run's path (bench/README.md, "Why the current settings").
   */
  private readonly returning = new Map<string, Set<Promise<void>>>();
  /** Ready contexts on (the default) or off: `scripts/measure-runs.mjs` compares both in one process. */
  readyContexts = true;
  /** How long making a ready context may take (wall time): tests on a loaded machine give more. */
  prepareTimeoutMs = PREPARE_TIMEOUT_MS;

  constructor(private readonly factory: IsolateFactory) {}

  configure(maxIdle: number): void {
    this.target = maxIdle;
    while (this.count > this.target) this.evictOldest();
    if (this.target > 0 && !this.sweep) {
      this.sweep = setInterval(() => this.disposeIdle(Date.now()), SWEEP_EVERY_MS);
      this.sweep.unref();
    }
  }

  /** Idle isolates kept right now. */
  get size(): number {
    return this.count;
  }

  /** Idle isolates of one key. */
  sizeOf(poolKey: string): number {
    return this.idle.get(poolKey)?.length ?? 0;
  }

  isolates(): ivm.Isolate[] {
    return [...this.idle.values()].flat().map((p) => p.isolate);
  }

  /**
   * An idle isolate of the key: the most recently used one whose ready context is made, else (unless
   * `readyOnly`) the one whose context has been in the making longest (the first given back).
   */
  take(poolKey: string, readyOnly = false): PreparedIsolate | undefined {
    const idle = this.idle.get(poolKey);
    if (!idle) return undefined;
    let at = idle.length - 1;
    if (this.readyContexts) {
      while (at >= 0 && !(idle[at]!.next && idle[at]!.nextSettled)) at--;
      if (at < 0) {
        if (readyOnly) return undefined;
        at = 0;
      }
    }
    const [found] = idle.splice(at, 1);
    this.count--;
    if (idle.length === 0) this.idle.delete(poolKey);
    return found;
  }

  /** Isolates of the key on their way back (their heap being read), if any. */
  returningOf(poolKey: string): Set<Promise<void>> | undefined {
    return this.returning.get(poolKey);
  }

  /** Resolves once every isolate whose run has ended is back in its pool or disposed of. */
  async returned(): Promise<void> {
    await Promise.all([...this.returning.values()].flatMap((pending) => [...pending]));
  }

  /** Resolves once every isolate whose run has ended is back, and each pooled one's ready context is made (or failed). */
  async contextsMade(): Promise<void> {
    await this.returned();
    const making = [...this.idle.values()].flat().flatMap((prepared) => prepared.next ?? []);
    await Promise.all(making);
  }

  /**
   * An isolate whose run ended cleanly: back into the pool if its heap is well under its limit, with its
   * next run's context made while it waits ("ready contexts"); disposed of otherwise.
   */
  giveBack(
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
          disposeIsolate(prepared);
          return;
        }
        this.give(poolKey, prepared);
        if (isolate.isDisposed) releaseContext(ctx);
        else if (this.readyContexts) {
          prepared.nextSettled = false;
          // Never rejects (a failure drops the isolate), so no run awaiting it is ever thrown at.
          prepared.next = this.prepareNext(poolKey, prepared, ctx, bundle)
            .catch(() => undefined)
            .finally(() => (prepared.nextSettled = true));
        } else {
          releaseContext(ctx);
        }
      },
      () => disposeIsolate(prepared),
    );
    const pending = this.returning.get(poolKey) ?? new Set<Promise<void>>();
    this.returning.set(poolKey, pending);
    pending.add(back);
    void back.finally(() => {
      pending.delete(back);
      if (pending.size === 0 && this.returning.get(poolKey) === pending) this.returning.delete(poolKey);
    });
  }

  /** Disposes of every idle isolate and stops the sweep; isolates still returning are disposed of as they come. */
  dispose(): void {
    this.target = 0;
    while (this.count > 0) this.evictOldest();
    if (this.sweep) clearInterval(this.sweep);
    this.sweep = undefined;
  }

  private give(poolKey: string, prepared: PreparedIsolate): void {
    if (this.target <= 0) {
      disposeIsolate(prepared);
      return;
    }
    while (this.count >= this.target) this.evictOldest();
    prepared.idleSince = Date.now();
    const idle = this.idle.get(poolKey) ?? [];
    // Keys are re-inserted on use, so the first one is the least recently used.
    this.idle.delete(poolKey);
    idle.push(prepared);
    this.idle.set(poolKey, idle);
    this.count++;
  }

  /** Takes an isolate out of its pool (one whose next context could not be made: it is being disposed of). */
  private drop(poolKey: string, prepared: PreparedIsolate): void {
    const idle = this.idle.get(poolKey);
    const at = idle?.indexOf(prepared) ?? -1;
    if (!idle || at < 0) return;
    idle.splice(at, 1);
    this.count--;
    if (idle.length === 0) this.idle.delete(poolKey);
  }

  private evictOldest(): void {
    for (const [key, idle] of this.idle) {
      const oldest = idle.shift();
      if (idle.length === 0) this.idle.delete(key);
      if (oldest) {
        disposeIsolate(oldest);
        this.count--;
        return;
      }
    }
  }

  private disposeIdle(now: number): void {
    for (const [key, idle] of this.idle) {
      while (idle.length > 0 && now - idle[0]!.idleSince > POOL_IDLE_MS) {
        disposeIsolate(idle.shift()!);
        this.count--;
      }
      if (idle.length === 0) this.idle.delete(key);
    }
  }

  /**
   * The next run's context, made while the isolate waits in its pool, off any run's path ("ready
   * contexts", README "Isolates"): the library, the prelude, the library parts the last run used (zod,
   * URL, Buffer: a version that never touches zod never pays for it) and the bundle's module top level.
   * Nothing of any run is in it: the run binds its own host references and metadata in one call when it
   * takes the isolate. The last run's context is released here, after its library use is read.
   */
  private async prepareNext(
    poolKey: string,
    prepared: PreparedIsolate,
    last: RunContext,
    bundle: { code: string; name: string },
  ): Promise<RunContext | undefined> {
    await new Promise((resolve) => setImmediate(resolve));
    let used = '';
    try {
      // A closure of the prelude reading the library's own state, not the script's; checked all the same.
      const answer = await last.control.apply(undefined, ['used'], { timeout: this.prepareTimeoutMs });
      if (typeof answer === 'string' && /^[A-Za-z,]{0,64}$/.test(answer)) used = answer;
    } catch {
      // the library use is only a hint
    }
    releaseContext(last);
    const { isolate } = prepared;
    const attempt = async (loadBundle: boolean): Promise<RunContext> => {
      const ctx = await this.factory.newContext(prepared, this.prepareTimeoutMs);
      try {
        if (used !== '') {
          await ctx.control.apply(undefined, ['warm', used], { timeout: this.prepareTimeoutMs });
        }
        if (loadBundle) {
          const script = await this.factory.bundleIn(prepared, bundle.code, bundle.name);
          const before = Number(isolate.cpuTime) / 1e6;
          await script.run(ctx.context, { timeout: this.prepareTimeoutMs });
          const loaded = await ctx.control.apply(undefined, ['load'], { timeout: this.prepareTimeoutMs });
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
      this.drop(poolKey, prepared);
      disposeIsolate(prepared);
      return undefined;
    }
  }
}
