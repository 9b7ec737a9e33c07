import { randomUUID } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Controller, type INestMicroservice } from '@nestjs/common';
import { Transport } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { natsRequest, SwitchboardError } from '@switchboard/contracts';
import { testInfrastructure } from '@switchboard/testing';
import { connect, type NatsConnection } from 'nats';
import { z } from 'zod';
import { NatsHandler, natsHandlerDefinitions } from './nats-handler.decorator';
import { NatsRequester } from './nats-requester';
import { DepthLimitedNatsDeserializer } from './payload-depth';

const prefix = `test.${randomUUID().slice(0, 8)}`;

const ECHO = {
  echo: natsRequest({
    subject: `${prefix}.echo`,
    request: z.object({ text: z.string().max(5) }),
    reply: z.object({ echoed: z.string() }),
  }),
  domainError: natsRequest({ subject: `${prefix}.domain-error`, request: z.object({}), reply: z.never() }),
  hold: natsRequest({
    subject: `${prefix}.hold`,
    request: z.object({ rows: z.array(z.unknown()) }),
    reply: z.object({ rows: z.number() }),
  }),
  store: natsRequest({
    subject: `${prefix}.store`,
    request: z.object({ value: z.unknown() }),
    reply: z.object({ stored: z.number() }),
  }),
  crash: natsRequest({ subject: `${prefix}.crash`, request: z.object({}), reply: z.never() }),
  /** Nobody answers it. */
  nobody: natsRequest({
    subject: `${prefix}.nobody`,
    request: z.object({ id: z.string() }),
    reply: z.null(),
  }),
};

/** Set while the `hold` handler waits: the test lets it answer. */
let release: (() => void) | undefined;
/** Values the `store` handler kept (as a service keeps metadata: serialised). */
const stored: string[] = [];

@Controller()
class EchoHandlers {
  @NatsHandler(ECHO.echo)
  async echo(req: { text: string }) {
    return { echoed: req.text };
  }

  @NatsHandler(ECHO.domainError)
  async domainError(): Promise<never> {
    throw new SwitchboardError('not_found', 'no such thing');
  }

  @NatsHandler(ECHO.hold)
  async hold(req: { rows: unknown[] }) {
    await new Promise<void>((resolve) => (release = resolve));
    return { rows: req.rows.length };
  }

  @NatsHandler(ECHO.store)
  async store(req: { value: unknown }) {
    stored.push(JSON.stringify(req.value));
    return { stored: stored.length };
  }

  @NatsHandler(ECHO.crash)
  async crash(): Promise<never> {
    throw new Error('password=hunter2 leaked in a stack');
  }
}

describe('NATS request/reply between services', () => {
  let server: INestMicroservice;
  let nc: NatsConnection;
  let requester: NatsRequester;

  beforeAll(async () => {
    const { natsUrl } = await testInfrastructure();
    const moduleRef = await Test.createTestingModule({ controllers: [EchoHandlers] }).compile();
    server = moduleRef.createNestMicroservice({
      transport: Transport.NATS,
      // As service-kit's bootstrap sets up every service's NATS server.
      options: { servers: [natsUrl], queue: 'test', deserializer: new DepthLimitedNatsDeserializer() },
    });
    await server.listen();
    nc = await connect({ servers: natsUrl });
    requester = new NatsRequester(nc, 2000);
  });

  afterAll(async () => {
    await nc?.close();
    await server?.close();
  });

  it('delivers a validated payload and returns the handler result', async () => {
    await expect(requester.call(ECHO.echo, { text: 'hi' })).resolves.toEqual({ echoed: 'hi' });
  });

  it('refuses an invalid payload with per-field errors before the handler runs', async () => {
    // Sent without the caller's check, as a caller that skips it (or an older replica) would.
    const error = await requester
      .requestUnchecked(`${prefix}.echo`, { text: 'too long' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SwitchboardError);
    expect(error).toMatchObject({
      code: 'invalid_body',
      errors: [expect.objectContaining({ path: ['text'] })],
    });
  });

  it('refuses an invalid payload with the same error before sending it', async () => {
    await expect(requester.call(ECHO.echo, { text: 'too long' })).rejects.toMatchObject({
      code: 'invalid_body',
      message: `invalid payload for ${prefix}.echo`,
      errors: [expect.objectContaining({ path: ['text'] })],
    });
    // Nobody listens on this subject: an answer other than service_unavailable was given before sending.
    await expect(requester.call(ECHO.nobody, { id: 1 } as never)).rejects.toMatchObject({
      code: 'invalid_body',
    });
  });

  it('registers the subject of every handler with its definition', () => {
    expect(natsHandlerDefinitions().get(`${prefix}.echo`)).toBe(ECHO.echo);
    expect(natsHandlerDefinitions().has(`${prefix}.nobody`)).toBe(false);
  });

  it('keeps the code of a domain error across the wire', async () => {
    await expect(requester.call(ECHO.domainError, {})).rejects.toMatchObject({
      code: 'not_found',
      message: 'no such thing',
    });
  });

  it('turns an unexpected failure into a generic server_error without its details', async () => {
    const error = (await requester.call(ECHO.crash, {}).catch((e: unknown) => e)) as SwitchboardError;
    expect(error.code).toBe('server_error');
    expect(error.message).not.toContain('hunter2');
  });

  it('keeps only the encoded bytes of a payload while it waits for the reply', async () => {
    // A sync's batchSave sends 1000 records per request: kept reachable for the round trip, every batch
    // outlived the young generation's collections and piled up until a full one (bench/README.md).
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    let rows: unknown[] | undefined = Array.from({ length: 1000 }, (_, i) => ({
      id: i,
      notes: 'x'.repeat(100),
    }));
    const sent = new WeakRef(rows);
    const reply = requester.call(ECHO.hold, { rows });
    rows = undefined;
    while (!release) await new Promise((resolve) => setTimeout(resolve, 5));
    gc();
    const kept = sent.deref() !== undefined;
    release();
    release = undefined;
    await expect(reply).resolves.toEqual({ rows: 1000 });
    expect(kept).toBe(false);
  });

  it('refuses a payload nesting 10,000 levels deep with invalid_body, before the handler sees it', async () => {
    // What a caller without the gateway's checks could publish (NatsRequester cannot even serialise it).
    const deep = '['.repeat(10_000) + ']'.repeat(10_000);
    const subject = `${prefix}.store`;
    const packet = `{"pattern":"${subject}","data":{"value":${deep}},"id":"${randomUUID()}"}`;
    const msg = await nc.request(subject, Buffer.from(packet), { timeout: 2000 });
    const reply = JSON.parse(Buffer.from(msg.data).toString('utf8')) as { response: unknown };
    expect(reply.response).toEqual({
      ok: false,
      error: {
        code: 'invalid_body',
        message: `The payload of ${subject} nests arrays or objects more than 128 levels deep`,
      },
    });
    expect(stored).toEqual([]);

    // A payload as deep as the limit allows (the packet and the request's object around it) still goes.
    const allowed = '['.repeat(126) + ']'.repeat(126);
    await expect(requester.call(ECHO.store, { value: JSON.parse(allowed) })).resolves.toEqual({ stored: 1 });
    expect(stored).toEqual([allowed]);
  });

  it('answers service_unavailable at once when no service listens', async () => {
    const started = Date.now();
    await expect(requester.call(ECHO.nobody, { id: 'x' })).rejects.toMatchObject({
      code: 'service_unavailable',
    });
    expect(Date.now() - started).toBeLessThan(1000);
  });
});
