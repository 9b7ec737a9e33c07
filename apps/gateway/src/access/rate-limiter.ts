import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { HealthRegistry } from '@switchboard/service-kit';
import Redis from 'ioredis';
import { LRUCache } from 'lru-cache';
import { GATEWAY_ENV, type GatewayEnv } from '../config/env';
import { recordRateLimitRejection } from '../metrics';

export interface RateVerdict {
  limited: boolean;
  limit: number;
  remaining: number;
  /** Epoch seconds at which the current window ends. */
  resetAt: number;
  /** Whole seconds to wait, at least 1 (only meaningful when limited). */
  retryAfter: number;
}

const WINDOW_MS = 60_000;
const KEY_PREFIX = 'switchboard:rl';

/**
 * Takes up to ARGV[2] requests from the window's allowance in one step, never more than what is left.
 * The window starts with its first request and lasts ARGV[3] ms (the key's time to live).
 * Returns { granted, used after the grant, ms left in the window }.
 */
const LEASE_SCRIPT = `
local limit = tonumber(ARGV[1])
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local grant = math.min(tonumber(ARGV[2]), limit - used)
if grant > 0 then
  used = redis.call('INCRBY', KEYS[1], grant)
  if used == grant then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
else
  grant = 0
end
return {grant, used, redis.call('PTTL', KEYS[1])}
`;

interface Bucket {
  /** The window's allowance for this key (the account limit, or another class's). */
  points: number;
  /** When the window ends (epoch ms, as Redis reported it; 0 until the first lease). */
  endsAt: number;
  /** Requests this replica may still let through in the window without asking Redis. */
  left: number;
  /** The window's total handed out to every replica, as of this replica's last lease. */
  used: number;
  /** Redis said the window is spent: refuse locally until it ends. */
  spent: boolean;
  pending: Promise<void> | null;
}

type RedisWithLease = Redis & {
  switchboardLease(
    key: string,
    limit: number,
    want: number,
    windowMs: number,
  ): Promise<[number, number, number]>;
};

/**
 * Fixed 60-second windows per account (starting with the window's first request), shared by every gateway replica through
 * Redis. Asking Redis on every request would put a round trip on every proxied call, so a replica leases
 * a small slice of the window's allowance at a time (at most `limit × SWITCHBOARD_RATE_LIMIT_LEASE_FRACTION`,
 * 1 for small limits, so those stay exact) and spends it locally. Redis never hands out more than the
 * limit, so the limit holds across replicas; the price is that slices leased but unused by one replica
 * (at most one slice each) are not available to the others, and `X-RateLimit-Remaining` counts them as
 * spent. (rate-limiter-flexible asks Redis on every request and has no such leasing.)
 *
 * If Redis is unreachable each replica counts alone in memory (fail-open per replica rather than
 * refusing all traffic); readiness reports Redis as down meanwhile. A fixed window lets up to twice the
 * limit through across a window edge.
 */
@Injectable()
export class AccountRateLimiter implements OnModuleInit, OnApplicationShutdown {
  private readonly redis: RedisWithLease;
  private readonly buckets = new LRUCache<string, Bucket>({ max: 100_000 });
  private readonly fallback = new LRUCache<string, { endsAt: number; count: number }>({ max: 100_000 });
  readonly points: number;
  private readonly fraction: number;

  constructor(
    @Inject(GATEWAY_ENV) env: GatewayEnv,
    private readonly health: HealthRegistry,
  ) {
    this.points = env.SWITCHBOARD_RATE_LIMIT_PER_MIN;
    this.fraction = env.SWITCHBOARD_RATE_LIMIT_LEASE_FRACTION;
    this.redis = new Redis(env.REDIS_URL, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectionName: 'switchboard-gateway',
    }) as RedisWithLease;
    this.redis.on('error', () => undefined); // reported through readiness, not as unhandled errors
    this.redis.defineCommand('switchboardLease', { numberOfKeys: 1, lua: LEASE_SCRIPT });
  }

  /** Waits (briefly) for Redis, so the first requests after boot are counted in the shared window. */
  async onModuleInit(): Promise<void> {
    this.health.register({
      name: 'redis',
      readinessOnly: true,
      check: async () => ({ ok: this.redis.status === 'ready', detail: this.redis.status }),
    });
    if (this.redis.status === 'ready') return;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.redis.off('ready', done);
        resolve();
      };
      const timer = setTimeout(done, 2_000);
      this.redis.once('ready', done);
    });
  }

  async onApplicationShutdown(): Promise<void> {
    this.redis.disconnect();
  }

  /**
   * Counts one request from this replica's leased slice when that needs no round trip: the verdict (never a
   * refusal), or undefined when the slice is empty, the window spent or Redis must be asked (then `consume`).
   */
  consumeLocal(key: string): RateVerdict | undefined {
    const bucket = this.buckets.get(key);
    if (!bucket || bucket.left <= 0 || bucket.endsAt <= Date.now()) return undefined;
    bucket.left -= 1;
    return this.verdict(bucket.points, bucket.endsAt, false, bucket.points - bucket.used + bucket.left);
  }

  /**
   * Counts one request against every `[key, points]` window at once when each still has room in this
   * replica's slice (no round trip), and returns true; otherwise counts nothing and returns false (then
   * `consume` each). All or nothing, so a request handed on to `consume` is never counted twice.
   */
  consumeLocalAll(checks: readonly (readonly [string, number])[]): boolean {
    const now = Date.now();
    for (const [key, points] of checks) {
      const bucket = this.buckets.get(key);
      if (!bucket || bucket.points !== points || bucket.left <= 0 || bucket.endsAt <= now) return false;
    }
    for (const [key] of checks) this.buckets.get(key)!.left -= 1;
    return true;
  }

  /**
   * Counts one request against `key`'s window of `points` requests (the account limit unless given). Each
   * class of key (account, connect session, client address, webhook environment) has its own prefix, so
   * one class can never spend another's window.
   */
  async consume(key: string, points = this.points): Promise<RateVerdict> {
    let bucket = this.buckets.get(key);
    if (!bucket || bucket.points !== points || (bucket.endsAt !== 0 && bucket.endsAt <= Date.now())) {
      bucket = { points, endsAt: 0, left: 0, used: 0, spent: false, pending: null };
      this.buckets.set(key, bucket);
    }
    for (;;) {
      if (bucket.left > 0) {
        bucket.left -= 1;
        return this.verdict(points, bucket.endsAt, false, points - bucket.used + bucket.left);
      }
      if (bucket.spent) return this.refused(key, points, bucket.endsAt);
      if (!bucket.pending) {
        const leasing = bucket;
        leasing.pending = this.lease(key, leasing).finally(() => {
          leasing.pending = null;
        });
      }
      try {
        await bucket.pending;
      } catch {
        return this.consumeLocally(key, points);
      }
    }
  }

  /**
   * Whether `key`'s window of `points` is spent, without counting a request: the refusal's verdict, or
   * undefined while there is room. For limits that count failures only (console sign-in per email): ask
   * this first, and `consume` once the attempt failed. Falls back to this replica's count when Redis is away.
   */
  async exhausted(key: string, points: number): Promise<RateVerdict | undefined> {
    const bucket = this.buckets.get(key);
    if (bucket && bucket.points === points && bucket.spent && bucket.endsAt > Date.now()) {
      return this.refused(key, points, bucket.endsAt);
    }
    try {
      const [used, ttlMs] = await Promise.all([
        this.redis.get(`${KEY_PREFIX}:${key}`),
        this.redis.pttl(`${KEY_PREFIX}:${key}`),
      ]);
      if (Number(used ?? 0) < points) return undefined;
      return this.refused(key, points, Date.now() + Math.max(0, ttlMs));
    } catch {
      const entry = this.fallback.get(key);
      if (!entry || entry.endsAt <= Date.now() || entry.count < points) return undefined;
      return this.refused(key, points, entry.endsAt);
    }
  }

  private async lease(key: string, bucket: Bucket): Promise<void> {
    const [granted, used, ttlMs] = await this.redis.switchboardLease(
      `${KEY_PREFIX}:${key}`,
      bucket.points,
      Math.max(1, Math.floor(bucket.points * this.fraction)),
      WINDOW_MS,
    );
    bucket.left += granted;
    bucket.used = used;
    // Measured after the round trip, so this replica's view of the window ends slightly early, never late.
    bucket.endsAt = Date.now() + Math.max(0, ttlMs);
    if (granted === 0) bucket.spent = true;
  }

  private consumeLocally(key: string, points: number): RateVerdict {
    const now = Date.now();
    let entry = this.fallback.get(key);
    if (!entry || entry.endsAt <= now) {
      entry = { endsAt: now + WINDOW_MS, count: 0 };
      this.fallback.set(key, entry);
    }
    if (entry.count >= points) return this.refused(key, points, entry.endsAt);
    entry.count += 1;
    return this.verdict(points, entry.endsAt, false, points - entry.count);
  }

  private refused(key: string, limit: number, endsAt: number): RateVerdict {
    recordRateLimitRejection(key);
    return this.verdict(limit, endsAt, true, 0);
  }

  private verdict(limit: number, endsAt: number, limited: boolean, remaining: number): RateVerdict {
    const msBeforeNext = Math.max(0, endsAt - Date.now());
    return {
      limited,
      limit,
      remaining: Math.max(0, remaining),
      resetAt: Math.ceil(endsAt / 1000),
      retryAfter: Math.max(1, Math.ceil(msBeforeNext / 1000)),
    };
  }
}
