import { setImmediate as nextTurn } from 'node:timers/promises';
import { Logger } from '@nestjs/common';
import { SwitchboardError, type Reply } from '@switchboard/contracts';
import {
  Empty,
  headers as natsHeaders,
  RequestStrategy,
  type Msg,
  type NatsConnection,
  type Subscription,
} from 'nats';
import type { z } from 'zod';
import { decodeRawReply, encodeRawReply } from './raw-reply';
import { handleRequest, sendRequest, unwrapReply } from './request-handling';
import { transportError } from './transport-error';

const logger = new Logger('StreamResponder');

/** The header of the message that ends a stream which failed after its first message went out. */
const ABORTED = 'Switchboard-Stream-Aborted';

/** What a streaming handler answers: metadata known up front, then the body in pieces, made as asked for. */
export interface StreamAnswer<M> {
  meta: M;
  /** Each piece goes out as one message (its chunks copied once into it), the first with the metadata. */
  body: AsyncIterable<readonly Uint8Array[]>;
}

function join(chunks: readonly Uint8Array[]): Buffer {
  return chunks.length === 1 ? Buffer.from(chunks[0]!) : Buffer.concat(chunks);
}

/**
 * Answers `subject` with several messages, so that the requester can pass on the first piece of a large
 * body while the next is being made (`requestStream`). The wire format: the first message is a raw reply
 * (`encodeRawReply`: the `Reply` envelope line, then the first piece); each further piece is a message of
 * bare body bytes; an empty message ends the stream. An error before the first message is sent is answered
 * as `serveRaw` answers it (the envelope with the error); after it, a message with the `ABORTED` header ends
 * the stream and the requester's body fails. Same queue group, trace and metrics as `serveRaw` (the server
 * span and `messaging.process.duration` cover the whole stream).
 */
export function serveStream<S extends z.ZodType, M>(
  nc: NatsConnection,
  subject: string,
  queue: string,
  schema: S,
  handler: (payload: z.infer<S>) => Promise<StreamAnswer<M>>,
): Subscription {
  return nc.subscribe(subject, {
    queue,
    callback: (error, msg) => {
      if (error) {
        logger.error(`${subject} subscription failed: ${error.message}`);
        return;
      }
      let started = false;
      const read = () => {
        try {
          return JSON.parse(Buffer.from(msg.data).toString('utf8')) as unknown;
        } catch {
          throw new SwitchboardError('invalid_body', `invalid payload for ${subject}: not JSON`);
        }
      };
      const stream = async (payload: z.infer<S>): Promise<null> => {
        const answer = await handler(payload);
        const pieces = answer.body[Symbol.asyncIterator]();
        const first = await pieces.next();
        msg.respond(encodeRawReply({ ok: true, data: answer.meta }, first.done ? '' : first.value));
        started = true;
        for (;;) {
          // The message just queued goes to the socket before the next piece is made.
          await nextTurn();
          const next = await pieces.next();
          if (next.done) break;
          msg.respond(join(next.value));
        }
        msg.respond(Empty);
        return null;
      };
      void handleRequest(subject, schema, msg.headers, read, stream).then((envelope) => {
        if (envelope.ok) return;
        try {
          if (!started) msg.respond(encodeRawReply(envelope));
          else {
            const hdrs = natsHeaders();
            hdrs.set(ABORTED, envelope.error.code);
            msg.respond(Buffer.from(envelope.error.code), { headers: hdrs });
          }
        } catch (sendError) {
          logger.error(`${subject} reply not sent: ${(sendError as Error).message}`);
        }
      });
    },
  });
}

/**
 * The requester side of `serveStream`: resolves with the metadata once the first message arrived (errors
 * until then as `requestRaw`: coded errors with their code, `service_unavailable` when nothing serves the
 * subject, `gateway_timeout`), and the body as the pieces arrive. The body fails (`server_error`) when the
 * responder aborts or the stream does not end within `timeoutMs` of the request: a body that ends without
 * failing is the whole body. The client span covers the request up to the metadata.
 */
export async function requestStream<M>(
  nc: NatsConnection,
  subject: string,
  data: unknown,
  options: { timeoutMs: number },
): Promise<{ meta: M; body: AsyncIterable<Uint8Array> }> {
  return sendRequest(subject, async (headers) => {
    let messages: AsyncIterator<Msg>;
    let first: IteratorResult<Msg>;
    try {
      const replies = await nc.requestMany(subject, Buffer.from(JSON.stringify(data)), {
        maxWait: options.timeoutMs,
        strategy: RequestStrategy.SentinelMsg,
        headers,
      });
      messages = replies[Symbol.asyncIterator]();
      first = await messages.next();
    } catch (error) {
      throw transportError(subject, error);
    }
    if (first.done) throw transportError(subject, { code: 'TIMEOUT' });
    let decoded: { envelope: Reply<M>; body: Uint8Array };
    try {
      decoded = decodeRawReply<M>(first.value.data);
    } catch {
      throw new SwitchboardError('server_error', `${subject} sent a malformed reply`);
    }
    const meta = unwrapReply(subject, decoded.envelope);
    async function* body(): AsyncGenerator<Uint8Array> {
      if (decoded.body.length > 0) yield decoded.body;
      for (;;) {
        let next: IteratorResult<Msg>;
        try {
          next = await messages.next();
        } catch (error) {
          throw transportError(subject, error);
        }
        if (next.done)
          throw new SwitchboardError('server_error', `${subject} did not end its answer in time`);
        const msg = next.value;
        if (msg.headers?.has(ABORTED)) throw new SwitchboardError('server_error', `${subject} failed midway`);
        if (msg.data.length === 0) return;
        yield msg.data;
      }
    }
    return { meta, body: body() };
  });
}
