import { Logger } from '@nestjs/common';
import {
  jsonDepthExceeds,
  MESSAGE_JSON_MAX_DEPTH,
  SwitchboardError,
  type Reply,
} from '@switchboard/contracts';
import { PayloadTooDeep } from './payload-depth';
import type { NatsConnection, Subscription } from 'nats';
import type { z } from 'zod';
import { handleRequest, sendRequest, unwrapReply } from './request-handling';
import { linkState, transportError, unreachable } from './transport-error';

const logger = new Logger('RawResponder');
const NEWLINE = 0x0a;

/**
 * What a raw handler answers: small metadata (sent as the JSON `Reply` envelope) and a body of bytes the
 * requester gets untouched, never escaped into a JSON string nor parsed.
 */
export interface RawAnswer<M> {
  meta: M;
  /**
   * Text is encoded once, together with the envelope, into the one reply buffer; chunks are copied (bytes)
   * or encoded (text) once into it, in order.
   */
  body: string | Uint8Array | readonly (Uint8Array | string)[];
}

/**
 * The wire format of a raw reply: the `Reply` envelope as one line of JSON (JSON.stringify never writes a
 * raw newline), a newline, then the body bytes. The request is the payload as plain JSON (not Nest's
 * `{pattern, data, id}` packet); the trace context travels in the NATS headers as for every request.
 */
export function encodeRawReply(envelope: Reply<unknown>, body: RawAnswer<unknown>['body'] = ''): Buffer {
  const head = `${JSON.stringify(envelope)}\n`;
  if (typeof body === 'string') return Buffer.from(`${head}${body}`, 'utf8');
  const chunks = body instanceof Uint8Array ? [body] : body;
  let length = Buffer.byteLength(head);
  for (const chunk of chunks) length += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
  // Sized first, written once: no intermediate Buffer per text chunk.
  const reply = Buffer.allocUnsafe(length);
  let at = reply.write(head);
  for (const chunk of chunks) {
    if (typeof chunk === 'string') {
      at += reply.write(chunk, at);
    } else {
      reply.set(chunk, at);
      at += chunk.length;
    }
  }
  return reply;
}

export function decodeRawReply<M>(data: Uint8Array): { envelope: Reply<M>; body: Uint8Array } {
  const end = data.indexOf(NEWLINE);
  if (end < 0) throw new SwitchboardError('server_error', 'a raw reply without its envelope line');
  const envelope = JSON.parse(Buffer.from(data.buffer, data.byteOffset, end).toString('utf8')) as Reply<M>;
  return { envelope, body: data.subarray(end + 1) };
}

/**
 * Answers `subject` with a plain NATS subscription in the service's queue group (`queue`, the name Nest's
 * transport uses, so replicas share the work and the server's permissions are the same), for replies
 * whose bulk is bytes: validates the payload with `schema` (`invalid_body`), continues the caller's trace,
 * records `messaging.process.duration`, and answers coded errors with their code and anything else as
 * `server_error` (details logged, not sent), as `@NatsHandler` does.
 */
export function serveRaw<S extends z.ZodType, M>(
  nc: NatsConnection,
  subject: string,
  queue: string,
  schema: S,
  handler: (payload: z.infer<S>) => Promise<RawAnswer<M>>,
): Subscription {
  return nc.subscribe(subject, {
    queue,
    callback: (error, msg) => {
      if (error) {
        logger.error(`${subject} subscription failed: ${error.message}`);
        return;
      }
      const read = () => {
        if (jsonDepthExceeds(msg.data, MESSAGE_JSON_MAX_DEPTH)) return new PayloadTooDeep();
        try {
          return JSON.parse(Buffer.from(msg.data).toString('utf8')) as unknown;
        } catch {
          throw new SwitchboardError('invalid_body', `invalid payload for ${subject}: not JSON`);
        }
      };
      void handleRequest(subject, schema, msg.headers, read, handler).then((envelope) => {
        try {
          msg.respond(
            envelope.ok
              ? encodeRawReply({ ok: true, data: envelope.data.meta }, envelope.data.body)
              : encodeRawReply(envelope),
          );
        } catch (sendError) {
          // A reply larger than the server's max_payload, or the connection closing.
          logger.error(`${subject} reply not sent: ${(sendError as Error).message}`);
        }
      });
    },
  });
}

/**
 * The requester side of `serveRaw`: sends `data` as JSON, returns the reply's metadata and its body bytes
 * (a view of the received message, not copied). Errors as `NatsRequester.call`, with the same client
 * span and `messaging.client.operation.duration`.
 */
export async function requestRaw<M>(
  nc: NatsConnection,
  subject: string,
  data: unknown,
  options: { timeoutMs: number },
): Promise<{ meta: M; body: Uint8Array }> {
  const link = linkState(nc);
  return sendRequest(subject, async (headers) => {
    if (link.down) throw unreachable(subject);
    const drops = link.drops;
    let msg;
    try {
      msg = await nc.request(subject, Buffer.from(JSON.stringify(data)), {
        timeout: options.timeoutMs,
        headers,
      });
    } catch (error) {
      throw transportError(subject, error, link.down || link.drops !== drops);
    }
    let decoded: { envelope: Reply<M>; body: Uint8Array };
    try {
      decoded = decodeRawReply<M>(msg.data);
    } catch {
      throw new SwitchboardError('server_error', `${subject} sent a malformed reply`);
    }
    return { meta: unwrapReply(subject, decoded.envelope), body: decoded.body };
  });
}
