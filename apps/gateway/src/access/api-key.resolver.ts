import { hash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { SwitchboardError, type VerifiedKey, API_KEY_REQUESTS } from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import { LRUCache } from 'lru-cache';
import { GATEWAY_ENV, type GatewayEnv } from '../config/env';

/**
 * Resolves a presented secret key to its environment and scopes by asking auth-connect with the key's
 * hash. Verified keys are cached briefly (SWITCHBOARD_KEY_CACHE_TTL_MS) so the hot path costs no NATS
 * round trip; that TTL (plus at most 100 ms) is the longest a revoked key can still be used. Unknown keys are not cached.
 */
@Injectable()
export class ApiKeyResolver {
  private readonly cache: LRUCache<string, VerifiedKey> | undefined;
  private readonly inFlight = new Map<string, Promise<VerifiedKey | null>>();

  constructor(
    private readonly nats: NatsRequester,
    @Inject(GATEWAY_ENV) env: GatewayEnv,
  ) {
    // Ages read to 100 ms (lru-cache's default, 1 ms, arms a timer for nearly every busy millisecond).
    this.cache =
      env.SWITCHBOARD_KEY_CACHE_TTL_MS > 0
        ? new LRUCache({ max: 10_000, ttl: env.SWITCHBOARD_KEY_CACHE_TTL_MS, ttlResolution: 100 })
        : undefined;
  }

  /** The key's verified record if this replica holds it (no round trip), else undefined. */
  cached(key: string): VerifiedKey | undefined {
    return this.cache?.get(hashOf(key));
  }

  async resolve(key: string): Promise<VerifiedKey | null> {
    const keyHash = hashOf(key);
    const cached = this.cache?.get(keyHash);
    if (cached) return cached;
    let pending = this.inFlight.get(keyHash);
    if (!pending) {
      pending = this.lookup(keyHash).finally(() => this.inFlight.delete(keyHash));
      this.inFlight.set(keyHash, pending);
    }
    return pending;
  }

  private async lookup(keyHash: string): Promise<VerifiedKey | null> {
    try {
      const verified = await this.nats.call(API_KEY_REQUESTS.verify, { keyHash }, { timeoutMs: 5000 });
      this.cache?.set(keyHash, verified);
      return verified;
    } catch (error) {
      if (error instanceof SwitchboardError && error.code === 'unknown_account') return null;
      throw error;
    }
  }
}

/** The key's SHA-256 in hex, as auth-connect stores it (one-shot `hash`: half the cost of `createHash` per call). */
function hashOf(key: string): string {
  return hash('sha256', key, 'hex');
}
