import { randomUUID } from 'node:crypto';
import { SwitchboardError } from '@switchboard/contracts';
import { testInfrastructure } from '@switchboard/testing';
import { connect, type NatsConnection } from 'nats';
import { z } from 'zod';
import { NatsRequester } from './nats-requester';
import { serveRaw } from './raw-reply';

const prefix = `test.${randomUUID().slice(0, 8)}`;

describe('raw replies (serveRaw / requestRaw): metadata and a body of bytes', () => {
  let server: NatsConnection;
  let client: NatsConnection;
  let requester: NatsRequester;

  beforeAll(async () => {
    const { natsUrl } = await testInfrastructure();
    server = await connect({ servers: natsUrl });
    client = await connect({ servers: natsUrl });
    requester = new NatsRequester(client, 2000);
    serveRaw(server, `${prefix}.page`, 'test', z.object({ n: z.number().int().max(3) }), async ({ n }) => {
      if (n < 0) throw new SwitchboardError('not_found', 'no such page');
      if (n === 0) throw new Error('password=hunter2 leaked in a stack');
      // Text with quotes, a newline and characters outside ASCII: the body arrives as these bytes.
      return {
        meta: { count: n },
        body: Array.from({ length: n }, (_, i) => `{"t":"é\\n\\"${i}"}`).join(','),
      };
    });
    serveRaw(server, `${prefix}.bytes`, 'test', z.object({}), async () => ({
      meta: null,
      body: Uint8Array.from([0, 10, 255]),
    }));
    // A body in chunks, a UTF-8 character split across two of them, bytes and text mixed.
    const split = Buffer.from('{"t":"日"}');
    serveRaw(server, `${prefix}.chunks`, 'test', z.object({}), async () => ({
      meta: { count: 3 },
      body: [split.subarray(0, 7), split.subarray(7), ',', '{"t":"é🎉"}', Buffer.from(','), '{"t":"x"}'],
    }));
    await server.flush();
  });

  afterAll(async () => {
    await client?.close();
    await server?.close();
  });

  it('answers the metadata and the body bytes as the handler gave them', async () => {
    const page = await requester.requestRaw<{ count: number }>(`${prefix}.page`, { n: 2 });
    expect(page.meta).toEqual({ count: 2 });
    const text = Buffer.from(page.body).toString('utf8');
    expect(JSON.parse(`[${text}]`)).toEqual([{ t: 'é\n"0' }, { t: 'é\n"1' }]);
    const bytes = await requester.requestRaw<null>(`${prefix}.bytes`, {});
    expect([...bytes.body]).toEqual([0, 10, 255]);
    const chunks = await requester.requestRaw<{ count: number }>(`${prefix}.chunks`, {});
    expect(JSON.parse(`[${Buffer.from(chunks.body).toString('utf8')}]`)).toEqual([
      { t: '日' },
      { t: 'é🎉' },
      { t: 'x' },
    ]);
  });

  it('answers a bad payload with invalid_body, coded errors with their code, others as server_error', async () => {
    await expect(requester.requestRaw(`${prefix}.page`, { n: 9 })).rejects.toMatchObject({
      code: 'invalid_body',
    });
    await expect(requester.requestRaw(`${prefix}.page`, { n: -1 })).rejects.toMatchObject({
      code: 'not_found',
      message: 'no such page',
    });
    const crash = await requester.requestRaw(`${prefix}.page`, { n: 0 }).catch((e: SwitchboardError) => e);
    expect(crash).toMatchObject({ code: 'server_error', message: 'internal error' });
    expect(JSON.stringify(crash)).not.toContain('hunter2');
  });

  it('answers service_unavailable when nothing serves the subject', async () => {
    await expect(requester.requestRaw(`${prefix}.nobody`, {})).rejects.toMatchObject({
      code: 'service_unavailable',
    });
  });
});
