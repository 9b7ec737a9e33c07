import { randomUUID } from 'node:crypto';
import { testInfrastructure } from '@switchboard/testing';
import { connect, DiscardPolicy, nanos, type NatsConnection } from 'nats';
import { ensureDurableConsumer, ensureStream, type StreamSpec } from './jetstream';

/** The disk budget of a stream, against a real NATS JetStream server. */
describe('ensureStream', () => {
  let nc: NatsConnection;
  const id = randomUUID().slice(0, 8);
  const spec: StreamSpec = {
    name: `TEST_BUDGET_${id}`,
    subjects: [`test-budget.${id}.>`],
    maxAgeSeconds: 3600,
    duplicateWindowSeconds: 60,
  };

  beforeAll(async () => {
    nc = await connect({ servers: (await testInfrastructure()).natsUrl });
  });

  afterAll(async () => {
    const jsm = await nc.jetstreamManager();
    await jsm.streams.delete(spec.name).catch(() => undefined);
    await nc.close();
  });

  it('keeps a flood within max_bytes by dropping the oldest messages, and moves an existing stream to a new budget', async () => {
    const maxBytes = 64 * 1024;
    await ensureStream(nc, spec, { maxBytes, discard: 'old' });
    const js = nc.jetstream();
    const payload = Buffer.alloc(4 * 1024, 'x');
    for (let i = 0; i < 64; i++) await js.publish(`test-budget.${id}.flood`, payload);

    const jsm = await nc.jetstreamManager();
    const info = await jsm.streams.info(spec.name);
    expect(info.config).toMatchObject({ max_bytes: maxBytes, discard: DiscardPolicy.Old });
    expect(info.state.bytes).toBeLessThanOrEqual(maxBytes);
    // The newest message is kept, the first ones went.
    expect(info.state.last_seq).toBe(64);
    expect(info.state.first_seq).toBeGreaterThan(1);

    // A second boot with another budget (both ways: bytes and policy) updates the stream in place.
    await ensureStream(nc, spec, { maxBytes: 2 * maxBytes, discard: 'new' });
    const updated = await jsm.streams.info(spec.name);
    expect(updated.config).toMatchObject({ max_bytes: 2 * maxBytes, discard: DiscardPolicy.New });
    expect(updated.state.last_seq).toBe(64);
  });

  it('keeps the configured number of copies, and names the variable when a single server cannot keep more', async () => {
    await ensureStream(nc, spec, { maxBytes: 64 * 1024, discard: 'old', replicas: 1 });
    const jsm = await nc.jetstreamManager();
    expect((await jsm.streams.info(spec.name)).config.num_replicas).toBe(1);
    // The test server is not clustered: three copies cannot be kept, and the stream is left as it was.
    await expect(
      ensureStream(nc, spec, { maxBytes: 64 * 1024, discard: 'old', replicas: 3 }),
    ).rejects.toThrow(/SWITCHBOARD_STREAM_REPLICAS/);
    expect((await jsm.streams.info(spec.name)).config.num_replicas).toBe(1);
  });

  it('names the variable to lower when the server cannot reserve the budget', async () => {
    await expect(ensureStream(nc, spec, { maxBytes: 2 ** 52, discard: 'old' })).rejects.toThrow(
      /SWITCHBOARD_STREAM_MAX_BYTES/,
    );
  });
});

/** Durable consumers as the relay and the orchestrator create them at boot, against a real JetStream. */
describe('ensureDurableConsumer', () => {
  let nc: NatsConnection;
  const id = randomUUID().slice(0, 8);
  const stream: StreamSpec = {
    name: `TEST_DURABLE_${id}`,
    subjects: [`test-durable.${id}.>`],
    maxAgeSeconds: 3600,
    duplicateWindowSeconds: 60,
  };
  const subject = `test-durable.${id}.event`;

  beforeAll(async () => {
    nc = await connect({ servers: (await testInfrastructure()).natsUrl });
    await ensureStream(nc, stream);
    // Stored before any consumer exists.
    await nc.jetstream().publish(subject, Buffer.from('"early"'));
  });

  afterAll(async () => {
    const jsm = await nc.jetstreamManager();
    await jsm.streams.delete(stream.name).catch(() => undefined);
    await nc.close();
  });

  /** The next message the consumer hands out, acknowledged, or null when none comes within a second. */
  const next = async (durable: string) => {
    const consumer = await nc.jetstream().consumers.get(stream.name, durable);
    const message = await consumer.next({ expires: 1000 });
    message?.ack();
    return message ? (message.json() as string) : null;
  };

  it('starts a new consumer at every stored message or at new ones only, and replicas booting at once share one', async () => {
    const spec = (durable: string, from: 'all' | 'new') => ({
      stream: stream.name,
      durable,
      subject,
      from,
      ackWaitMs: 30_000,
      maxDeliver: 10,
    });
    // Three replicas at the same moment: no error, one consumer each name.
    await Promise.all([1, 2, 3].map(() => ensureDurableConsumer(nc, spec(`all-${id}`, 'all'))));
    await ensureDurableConsumer(nc, spec(`new-${id}`, 'new'));
    const jsm = await nc.jetstreamManager();
    expect((await jsm.consumers.list(stream.name).next()).map((c) => c.name).sort()).toEqual([
      `all-${id}`,
      `new-${id}`,
    ]);

    await nc.jetstream().publish(subject, Buffer.from('"late"'));
    expect(await next(`all-${id}`)).toBe('early');
    expect(await next(`all-${id}`)).toBe('late');
    expect(await next(`new-${id}`)).toBe('late');
    expect(await next(`new-${id}`)).toBeNull();
  });

  it('moves an existing consumer to a new ack wait, pending limit and delivery bound, keeping its position', async () => {
    const durable = `moved-${id}`;
    const own = `test-durable.${id}.moved`;
    for (const text of ['first', 'second'])
      await nc.jetstream().publish(own, Buffer.from(JSON.stringify(text)));
    const base = { stream: stream.name, durable, subject: own, from: 'all' as const };
    await ensureDurableConsumer(nc, { ...base, ackWaitMs: 30_000, maxDeliver: 10 });
    expect(await next(durable)).toBe('first');

    await ensureDurableConsumer(nc, { ...base, ackWaitMs: 5_000, maxAckPending: 123, maxDeliver: 7 });
    const info = await (await nc.jetstreamManager()).consumers.info(stream.name, durable);
    expect(info.config).toMatchObject({ ack_wait: nanos(5_000), max_ack_pending: 123, max_deliver: 7 });
    // Not started over: the message it acknowledged is not handed out again.
    expect(await next(durable)).toBe('second');
  });
});
