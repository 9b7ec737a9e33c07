import { randomUUID } from 'node:crypto';
import { SwitchboardError } from '@switchboard/contracts';
import { testInfrastructure } from '@switchboard/testing';
import { connect, type NatsConnection } from 'nats';
import { z } from 'zod';
import { NatsRequester } from './nats-requester';
import { serveStream } from './stream-reply';

const prefix = `test.${randomUUID().slice(0, 8)}`;

const text = async (body: AsyncIterable<Uint8Array>) => {
  const parts: Uint8Array[] = [];
  for await (const part of body) parts.push(part);
  return { parts: parts.length, text: Buffer.concat(parts).toString('utf8') };
};

describe('streamed replies (serveStream / requestStream): metadata, then the body in pieces', () => {
  let server: NatsConnection;
  let client: NatsConnection;
  let requester: NatsRequester;

  beforeAll(async () => {
    const { natsUrl } = await testInfrastructure();
    server = await connect({ servers: natsUrl });
    client = await connect({ servers: natsUrl });
    requester = new NatsRequester(client, 2000);
    // `n` pieces; `failAt` throws when piece `failAt` is made (0: before anything is sent).
    serveStream(
      server,
      `${prefix}.pieces`,
      'test',
      z.object({ n: z.number().int().min(0), failAt: z.number().int().optional() }),
      async ({ n, failAt }) => {
        if (n === 99) throw new SwitchboardError('not_found', 'no such page');
        async function* body() {
          for (let i = 0; i < n; i++) {
            if (i === failAt) throw new Error('password=hunter2 leaked in a stack');
            // A UTF-8 character split across two chunks of a piece.
            const split = Buffer.from(`"é${i}"`);
            yield [...(i > 0 ? [Buffer.from(',')] : []), split.subarray(0, 2), split.subarray(2)];
          }
        }
        return { meta: { count: n }, body: body() };
      },
    );
    await server.flush();
  });

  afterAll(async () => {
    await client?.close();
    await server?.close();
  });

  it('answers the metadata, then every piece in order, then ends', async () => {
    const page = await requester.requestStream<{ count: number }>(`${prefix}.pieces`, { n: 5 });
    expect(page.meta).toEqual({ count: 5 });
    const body = await text(page.body);
    expect(body.parts).toBe(5);
    expect(JSON.parse(`[${body.text}]`)).toEqual(['é0', 'é1', 'é2', 'é3', 'é4']);
    const empty = await requester.requestStream<{ count: number }>(`${prefix}.pieces`, { n: 0 });
    expect(empty.meta).toEqual({ count: 0 });
    expect(await text(empty.body)).toEqual({ parts: 0, text: '' });
  });

  it('answers errors before the first piece as coded errors: invalid_body, their code, server_error', async () => {
    await expect(requester.requestStream(`${prefix}.pieces`, { n: -1 })).rejects.toMatchObject({
      code: 'invalid_body',
    });
    await expect(requester.requestStream(`${prefix}.pieces`, { n: 99 })).rejects.toMatchObject({
      code: 'not_found',
      message: 'no such page',
    });
    const crash = await requester
      .requestStream(`${prefix}.pieces`, { n: 3, failAt: 0 })
      .catch((e: SwitchboardError) => e);
    expect(crash).toMatchObject({ code: 'server_error', message: 'internal error' });
    expect(JSON.stringify(crash)).not.toContain('hunter2');
  });

  it('fails the body when the responder fails after its first piece: never a short body that ends well', async () => {
    const page = await requester.requestStream<{ count: number }>(`${prefix}.pieces`, { n: 5, failAt: 3 });
    expect(page.meta).toEqual({ count: 5 });
    const received: string[] = [];
    const failure = await (async () => {
      for await (const part of page.body) received.push(Buffer.from(part).toString('utf8'));
    })().catch((e: SwitchboardError) => e);
    expect(failure).toMatchObject({ code: 'server_error' });
    expect(JSON.stringify(failure)).not.toContain('hunter2');
    expect(received).toEqual(['"é0"', ',"é1"', ',"é2"']);
  });

  it('answers service_unavailable when nothing serves the subject', async () => {
    await expect(requester.requestStream(`${prefix}.nobody`, {})).rejects.toMatchObject({
      code: 'service_unavailable',
    });
  });
});
