import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { HealthRegistry } from '@switchboard/service-kit';
import Redis from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { GATEWAY_ENV, type GatewayEnv } from '../config/env';

export interface RateVerdict {
  limited: boolean;
  limit: number;
  remaining: number;
  /** Epoch seconds at which the current window ends. */
  resetAt: number;
  /** Whole seconds to wait, at least 1 (only meaningful when limited). */
  retryAfter: number;
}

const WINDOW_S = 60;

/**
 * Fixed 60-second windows per account, counted in Redis so every gateway replica shares them.
 * If Redis is unreachable each replica falls back to an in-memory window of the same size (fail-open
 * per replica rather than refusing all traffic); readiness reports Redis as down meanwhile.
 * A fixed window lets up to twice the limit through across a window edge.
 */
@Injectable()
export class AccountRateLimiter implements OnModuleInit, OnApplicationShutdown {
  private readonly redis: Redis;
  private readonly limiter: RateLimiterRedis;
  readonly points: number;

  constructor(
    @Inject(GATEWAY_ENV) env: GatewayEnv,
    private readonly health: HealthRegistry,
  ) {
    this.points = env.SWITCHBOARD_RATE_LIMIT_PER_MIN;
    this.redis = new Redis(env.REDIS_URL, { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectionName: 'switchboard-gateway' });
    this.redis.on('error', () => undefined); // reported through readiness, not as unhandled errors
    this.limiter = new RateLimiterRedis({
      storeClient: this.redis,
      points: this.points,
      duration: WINDOW_S,
      keyPrefix: 'switchboard:rl',
      insuranceLimiter: new RateLimiterMemory({ points: this.points, duration: WINDOW_S }),
    });
  }

  onModuleInit(): void {
    this.health.register({
      name: 'redis',
      readinessOnly: true,
      check: async () => ({ ok: this.redis.status === 'ready', detail: this.redis.status }),
    });
  }

  async onApplicationShutdown(): Promise<void> {
    this.redis.disconnect();
  }

  async consume(key: string): Promise<RateVerdict> {
    try {
      return this.verdict(await this.limiter.consume(key, 1), false);
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) return this.verdict(rejection, true);
      throw rejection;
    }
  }

  private verdict(res: RateLimiterRes, limited: boolean): RateVerdict {
    return {
      limited,
      limit: this.points,
      remaining: Math.max(0, res.remainingPoints),
      resetAt: Math.ceil((Date.now() + res.msBeforeNext) / 1000),
      retryAfter: Math.max(1, Math.ceil(res.msBeforeNext / 1000)),
    };
  }
}
