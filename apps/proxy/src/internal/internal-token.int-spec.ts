import { proxyCallFixture, signedProxyCall } from '@switchboard/crypto/testing';
import { freePort, testInfrastructure } from '@switchboard/testing';
import Redis from 'ioredis';
import { GatewaySignatures, RedisNonces } from './internal-token';

const { key, url } = proxyCallFixture;

/** A gateway request, signed now with a fresh nonce. */
const signed = () => signedProxyCall({ at: Date.now() });

/** Two verifiers on one Redis behave as two proxy replicas. */
describe('GatewaySignatures with nonces in Redis', () => {
  const clients: Redis[] = [];
  const client = (redisUrl: string) => {
    const redis = new Redis(redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
    redis.on('error', () => undefined);
    clients.push(redis);
    return redis;
  };
  const ready = (redis: Redis) =>
    redis.status === 'ready' ? Promise.resolve() : new Promise((r) => redis.once('ready', r));

  afterAll(() => clients.forEach((c) => c.disconnect()));

  it('accepts a signed request on one replica and refuses it on the other', async () => {
    const { redisUrl } = await testInfrastructure();
    const [a, b] = [client(redisUrl), client(redisUrl)];
    await Promise.all([ready(a), ready(b)]);
    const one = new GatewaySignatures(key, new RedisNonces(a));
    const other = new GatewaySignatures(key, new RedisNonces(b));
    const headers = signed();
    expect(await one.verify('GET', url, headers)).toBeDefined();
    expect(await other.verify('GET', url, headers)).toBeUndefined();
    expect(await one.verify('GET', url, headers)).toBeUndefined();
    // Of two replicas racing on one nonce, exactly one wins.
    const raced = signed();
    const verdicts = await Promise.all([one.verify('GET', url, raced), other.verify('GET', url, raced)]);
    expect(verdicts.filter(Boolean)).toHaveLength(1);
  });

  it("falls back to the replica's own memory while Redis is unreachable, and says so", async () => {
    const down = client(`redis://127.0.0.1:${await freePort()}`);
    const warnings: string[] = [];
    const alone = new GatewaySignatures(key, new RedisNonces(down, (e) => warnings.push(e.message)));
    const headers = signed();
    expect(await alone.verify('GET', url, headers)).toBeDefined();
    expect(await alone.verify('GET', url, headers)).toBeUndefined();
    expect(warnings.length).toBeGreaterThan(0);
  });
});
