import { randomUUID } from 'node:crypto';
import { testInfrastructure } from '@switchboard/testing';
import { connect, DiscardPolicy, type NatsConnection } from 'nats';
import { ensureStream, type StreamSpec } from './jetstream';

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

  it('names the variable to lower when the server cannot reserve the budget', async () => {
    await expect(ensureStream(nc, spec, { maxBytes: 2 ** 52, discard: 'old' })).rejects.toThrow(
      /SWITCHBOARD_STREAM_MAX_BYTES/,
    );
  });
});
