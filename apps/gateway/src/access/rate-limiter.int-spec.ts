import { randomUUID } from 'node:crypto';
import { HealthRegistry } from '@switchboard/service-kit';
import { testInfrastructure } from '@switchboard/testing';
import { envSchema, type GatewayEnv } from '../config/env';
import { AccountRateLimiter } from './rate-limiter';

/** Two limiters on one Redis behave as two gateway replicas. */
describe('AccountRateLimiter (Redis, leased slices)', () => {
  const limiters: AccountRateLimiter[] = [];

  async function replica(overrides: Partial<Record<keyof GatewayEnv, string>>): Promise<AccountRateLimiter> {
    const infra = await testInfrastructure();
    const env = envSchema.parse({ REDIS_URL: infra.redisUrl, NATS_URL: infra.natsUrl, ...overrides });
    const limiter = new AccountRateLimiter(env, new HealthRegistry());
    limiters.push(limiter);
    await limiter.onModuleInit();
    return limiter;
  }

  afterAll(async () => {
    await Promise.all(limiters.map((l) => l.onApplicationShutdown()));
  });

  it('never lets more than the limit through across replicas, even in concurrent bursts', async () => {
    const env = { SWITCHBOARD_RATE_LIMIT_PER_MIN: '1000', SWITCHBOARD_RATE_LIMIT_LEASE_FRACTION: '0.01' };
    const [a, b] = [await replica(env), await replica(env)];
    const key = `account:${randomUUID()}`;
    const verdicts = await Promise.all(Array.from({ length: 1400 }, (_, i) => (i % 2 ? a : b).consume(key)));
    const allowed = verdicts.filter((v) => !v.limited).length;
    expect(allowed).toBeLessThanOrEqual(1000);
    // Each replica can strand at most one unused slice of 10.
    expect(allowed).toBeGreaterThanOrEqual(1000 - 2 * 10);
    for (const v of verdicts.filter((v) => v.limited)) {
      expect(v).toMatchObject({ limit: 1000, remaining: 0 });
      expect(v.retryAfter).toBeGreaterThanOrEqual(1);
      expect(v.retryAfter).toBeLessThanOrEqual(60);
    }
    // Once the window is spent, the other replica refuses as well.
    expect((await a.consume(key)).limited).toBe(true);
    expect((await b.consume(key)).limited).toBe(true);
  });

  it('counts exactly, request by request, when the limit is smaller than one slice', async () => {
    const env = { SWITCHBOARD_RATE_LIMIT_PER_MIN: '5' };
    const [a, b] = [await replica(env), await replica(env)];
    const key = `account:${randomUUID()}`;
    const remaining: number[] = [];
    for (const limiter of [a, b, a, b, b]) remaining.push((await limiter.consume(key)).remaining);
    expect(remaining).toEqual([4, 3, 2, 1, 0]);
    expect((await a.consume(key)).limited).toBe(true);
  });

  it('reports a window end within the next 60 seconds, the same on both replicas', async () => {
    const env = { SWITCHBOARD_RATE_LIMIT_PER_MIN: '100' };
    const [a, b] = [await replica(env), await replica(env)];
    const key = `account:${randomUUID()}`;
    const now = Date.now() / 1000;
    const first = await a.consume(key);
    const second = await b.consume(key);
    expect(first.resetAt).toBeGreaterThanOrEqual(Math.floor(now));
    expect(first.resetAt).toBeLessThanOrEqual(Math.ceil(now) + 61);
    expect(Math.abs(second.resetAt - first.resetAt)).toBeLessThanOrEqual(1);
  });

  it('counts a request against several windows locally all or nothing, never past either limit', async () => {
    // Slices of a tenth: 10 of the address's 100, 4 of the environment's 40.
    const limiter = await replica({ SWITCHBOARD_RATE_LIMIT_LEASE_FRACTION: '0.1' });
    const ip = `webhook-ip:${randomUUID()}`;
    const environment = `webhook-env:${randomUUID()}`;
    const checks = [
      [ip, 100],
      [environment, 40],
    ] as const;
    // Nothing leased yet: the local path declines, and counts nothing.
    expect(limiter.consumeLocalAll(checks)).toBe(false);
    // As the webhook lanes do: locally when both slices have room, else `consume` each (which leases).
    let allowed = 0;
    let local = 0;
    for (let i = 0; i < 60; i++) {
      if (limiter.consumeLocalAll(checks)) {
        allowed += 1;
        local += 1;
        continue;
      }
      const verdicts = [await limiter.consume(ip, 100), await limiter.consume(environment, 40)];
      if (verdicts.every((v) => !v.limited)) allowed += 1;
    }
    // The environment's window is the smaller: exactly that many got through, most without a round trip.
    expect(allowed).toBe(40);
    expect(local).toBeGreaterThanOrEqual(20);
    expect((await limiter.consume(environment, 40)).limited).toBe(true);
  });

  it('tells a spent window without counting, on every replica (failures-only limits)', async () => {
    const env = { SWITCHBOARD_RATE_LIMIT_PER_MIN: '1000' };
    const [a, b] = [await replica(env), await replica(env)];
    const key = `console-sign-in-email:${randomUUID()}`;
    // Asking spends nothing: the window stays open however often it is asked.
    for (let i = 0; i < 5; i++) expect(await a.exhausted(key, 3)).toBeUndefined();
    await a.consume(key, 3);
    await b.consume(key, 3);
    expect(await b.exhausted(key, 3)).toBeUndefined();
    await a.consume(key, 3);
    for (const limiter of [a, b]) {
      const verdict = await limiter.exhausted(key, 3);
      expect(verdict).toMatchObject({ limited: true, limit: 3, remaining: 0 });
      expect(verdict!.retryAfter).toBeGreaterThanOrEqual(1);
      expect(verdict!.retryAfter).toBeLessThanOrEqual(60);
    }
  });

  it('keeps counting in memory, per replica, while Redis is unreachable', async () => {
    // Port 1 on loopback: nothing listens, the connection is refused at once.
    const limiter = await replica({ SWITCHBOARD_RATE_LIMIT_PER_MIN: '3', REDIS_URL: 'redis://127.0.0.1:1' });
    const key = `account:${randomUUID()}`;
    const verdicts = [];
    for (let i = 0; i < 4; i++) verdicts.push(await limiter.consume(key));
    expect(verdicts.map((v) => v.limited)).toEqual([false, false, false, true]);
    expect(verdicts.map((v) => v.remaining)).toEqual([2, 1, 0, 0]);
  });
});
