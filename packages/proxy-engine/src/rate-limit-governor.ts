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

  /** How long to wait for the connection's known reset (0: go now); throws a 429 if that is too far away. */
  waitFor(key: string, now = Date.now()): number {
    const resetAt = this.resets.get(key);
    if (resetAt === undefined) return 0;
    const wait = resetAt - now;
    if (wait <= 0) {
      this.resets.delete(key);
      return 0;
    }
    if (wait > this.maxWaitMs) {
      const seconds = Math.max(1, Math.ceil(wait / 1000));
      throw new ProxyError(
        'too_many_request',
        `The provider's rate limit for this connection resets in ${seconds} s`,
        { 'retry-after': String(seconds) },
      );
    }
    return wait;
  }

  /** Records a reset announced by the provider (ms from now). */
  block(key: string, waitMs: number, now = Date.now()): void {
    if (waitMs <= 0) return;
    const resetAt = now + waitMs;
    const current = this.resets.get(key);
    if (current === undefined || current < resetAt) this.resets.set(key, resetAt, { ttl: waitMs + 1000 });
  }
}
