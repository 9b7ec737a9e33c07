import { setTimeout as sleep } from 'node:timers/promises';
import { LRUCache } from 'lru-cache';
import { ProxyError } from './proxy.errors';

/**
 * Per-connection memory of a provider's rate limit. When a provider answers 429 or reports its
 * remaining quota at zero, later calls for that connection wait for the announced reset instead of
 * spending requests the provider will refuse. A wait longer than the configured maximum is answered
 * at once with our 429 and a Retry-After, so callers never hang on a long provider window.
 *
 * The memory is per proxy replica: each replica learns a limit from its own traffic. That is enough to
 * stop a hammering loop (which lands on whichever replica keeps getting the 429s).
 */
export class RateLimitGovernor {
  private readonly resets = new LRUCache<string, number>({ max: 100_000 });

  constructor(private readonly maxWaitMs: number) {}

  /** Waits until the connection's known reset, or throws a 429 if that is too far away. */
  async awaitTurn(key: string, signal: AbortSignal, now = Date.now()): Promise<void> {
    const resetAt = this.resets.get(key);
    if (resetAt === undefined) return;
    const wait = resetAt - now;
    if (wait <= 0) {
      this.resets.delete(key);
      return;
    }
    if (wait > this.maxWaitMs) {
      const seconds = Math.max(1, Math.ceil(wait / 1000));
      throw new ProxyError(
        'too_many_request',
        `The provider's rate limit for this connection resets in ${seconds} s`,
        { 'retry-after': String(seconds) },
      );
    }
    await sleep(wait, undefined, { signal });
  }

  /** Records a reset announced by the provider (ms from now). */
  block(key: string, waitMs: number, now = Date.now()): void {
    if (waitMs <= 0) return;
    const resetAt = now + waitMs;
    const current = this.resets.get(key);
    if (current === undefined || current < resetAt) this.resets.set(key, resetAt, { ttl: waitMs + 1000 });
  }
}
