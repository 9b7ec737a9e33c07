import { randomUUID } from 'node:crypto';
import { testInfrastructure } from '@switchboard/testing';
import { connect, nanos, type NatsConnection } from 'nats';
import { fitsInline, parseStoredJson, PayloadStore } from './payload-store';

/** Large payloads through a real JetStream object store. */
describe('PayloadStore', () => {
  let nc: NatsConnection;
  const bucket = `test-payloads-${randomUUID().slice(0, 8)}`;

  beforeAll(async () => {
    nc = await connect({ servers: (await testInfrastructure()).natsUrl });
  });

  afterAll(async () => {
    const jsm = await nc.jetstreamManager();
    await jsm.streams.delete(`OBJ_${bucket}`).catch(() => undefined);
    await nc.close();
  });

  it('carries a payload over a NATS message’s size to another connection, once', async () => {
    const writer = new PayloadStore(nc, bucket, { ttlMs: 60_000 });
    const json = JSON.stringify({ rows: 'x'.repeat(3 * 1024 * 1024) });
    const { name, bytes } = await writer.put(Buffer.from(json));
    expect(bytes).toBe(Buffer.byteLength(json));

    const other = await connect({ servers: (await testInfrastructure()).natsUrl });
    try {
      const reader = new PayloadStore(other, bucket);
      const taken = await reader.take(name);
      expect(taken && parseStoredJson(taken)).toEqual(JSON.parse(json));
      // Taken means gone: a second read finds nothing, and deleting again is not an error.
      expect(await reader.get(name)).toBeUndefined();
      await expect(reader.delete(name)).resolves.toBeUndefined();
    } finally {
      await other.close();
    }
  });

  it('streams chunks under a chosen name, and creates its bucket with the TTL', async () => {
    const store = new PayloadStore(nc, bucket, { ttlMs: 60_000 });
    const name = `deploy-${randomUUID()}`;
    const chunks = [Buffer.from('{"a":'), Buffer.from('"b"}')];
    await store.put(ReadableStream.from(chunks), { name, timeoutMs: 10_000 });
    const stored = await store.get(name);
    expect(stored && parseStoredJson(stored)).toEqual({ a: 'b' });
    await store.delete(name);

    const jsm = await nc.jetstreamManager();
    const info = await jsm.streams.info(`OBJ_${bucket}`);
    expect(info.config.max_age).toBe(nanos(60_000));
  });

  it('says whether JSON fits inline by its UTF-8 bytes, not its characters', () => {
    expect(fitsInline('x'.repeat(10), 10)).toBe(true);
    expect(fitsInline('é'.repeat(6), 10)).toBe(false);
  });
});
