import { createSecretKey } from 'node:crypto';
import type { ProxyCaller } from '@switchboard/contracts';
import { proxyBodyDigest, signProxyCall } from '@switchboard/crypto';
import { freePort, testInfrastructure } from '@switchboard/testing';
import Redis from 'ioredis';
import { GatewaySignatures, RedisNonces } from './internal-token';

const key = createSecretKey(Buffer.from('k'.repeat(32)));
const caller: ProxyCaller = {
  accountId: 1,
  environmentId: 2,
  environmentUuid: '00000000-0000-4000-8000-000000000000',
  environmentName: 'dev',
  keyId: 3,
  credentialsOnAnyOrigin: false,
};
const url = '/proxy/users';
const connection = { 'provider-config-key': 'github', 'connection-id': 'c1' };

/** A gateway request, signed now with a fresh nonce. */
const signed = (): Record<string, string> => ({
  ...connection,
  ...signProxyCall(key, {
    method: 'GET',
    url,
    caller,
    headers: connection,
    bodyDigest: proxyBodyDigest(undefined),
  }),
});

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
