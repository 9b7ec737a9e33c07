import { Logger } from '@nestjs/common';
import { fieldErrorsFromZod, SwitchboardError, type Reply } from '@switchboard/contracts';
import {
  context,
  extractTraceContext,
  injectTraceContext,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@switchboard/observability';
import { headers as natsHeaders, type MsgHdrs, type NatsConnection, type Subscription } from 'nats';
import type { z } from 'zod';
import { recordProcessed, recordSent } from './metrics';
import { transportError } from './transport-error';

const logger = new Logger('RawResponder');
const tracer = trace.getTracer('@switchboard/messaging');
const NEWLINE = 0x0a;

const headerGetter = {
  keys: (h: MsgHdrs | undefined) => (h ? [...h.keys()] : []),
  get: (h: MsgHdrs | undefined, key: string) => (h?.has(key) ? h.get(key) : undefined),
};
const headerSetter = { set: (h: MsgHdrs, key: string, value: string) => h.set(key, value) };

/**
 * What a raw handler answers: small metadata (sent as the JSON `Reply` envelope) and a body of bytes the
 * requester gets untouched, never escaped into a JSON string nor parsed.
 */
export interface RawAnswer<M> {
  meta: M;
  /** Text is encoded once, together with the envelope, into the one reply buffer. */
  body: string | Uint8Array;
}

/**
 * The wire format of a raw reply: the `Reply` envelope as one line of JSON (JSON.stringify never writes a
 * raw newline), a newline, then the body bytes. The request is the payload as plain JSON (not Nest's
 * `{pattern, data, id}` packet); the trace context travels in the NATS headers as for every request.
 */
export function encodeRawReply(envelope: Reply<unknown>, body: string | Uint8Array = ''): Buffer {
  const head = JSON.stringify(envelope);
  if (typeof body === 'string') return Buffer.from(`${head}\n${body}`, 'utf8');
  const headBytes = Buffer.from(`${head}\n`, 'utf8');
  return Buffer.concat([headBytes, body], headBytes.length + body.length);
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
      const parent = extractTraceContext(msg.headers, headerGetter);
      void context.with(parent, () =>
        tracer.startActiveSpan(
          `${subject} process`,
          {
            kind: SpanKind.SERVER,
            attributes: { 'messaging.system': 'nats', 'messaging.destination.name': subject },
          },
          async (span) => {
            const start = performance.now();
            let errorType: string | undefined;
            let reply: Buffer;
            try {
              let data: unknown;
              try {
                data = JSON.parse(Buffer.from(msg.data).toString('utf8'));
              } catch {
                throw new SwitchboardError('invalid_body', `invalid payload for ${subject}: not JSON`);
              }
              const parsed = schema.safeParse(data);
              if (!parsed.success) {
                throw new SwitchboardError(
                  'invalid_body',
                  `invalid payload for ${subject}`,
                  fieldErrorsFromZod(parsed.error),
                );
              }
              const answer = await handler(parsed.data);
              reply = encodeRawReply({ ok: true, data: answer.meta }, answer.body);
            } catch (caught) {
              errorType = caught instanceof SwitchboardError ? caught.code : 'server_error';
              if (caught instanceof SwitchboardError) {
                span.setAttribute('switchboard.error_code', caught.code);
                reply = encodeRawReply({ ok: false, error: caught.toWire() });
              } else {
                span.recordException(caught as Error);
                span.setStatus({ code: SpanStatusCode.ERROR });
                logger.error(`${subject} failed: ${(caught as Error)?.stack ?? String(caught)}`);
                reply = encodeRawReply({
                  ok: false,
                  error: { code: 'server_error', message: 'internal error' },
                });
              }
            } finally {
              recordProcessed(subject, start, errorType);
              span.end();
            }
            try {
              msg.respond(reply);
            } catch (sendError) {
              // A reply larger than the server's max_payload, or the connection closing.
              logger.error(`${subject} reply not sent: ${(sendError as Error).message}`);
            }
          },
        ),
      );
    },
  });
}

/**
 * The requester side of `serveRaw`: sends `data` as JSON, returns the reply's metadata and its body bytes
 * (a view of the received message, not copied). Errors as `NatsRequester.request`, with the same client
 * span and `messaging.client.operation.duration`.
 */
export async function requestRaw<M>(
  nc: NatsConnection,
  subject: string,
  data: unknown,
  options: { timeoutMs: number },
): Promise<{ meta: M; body: Uint8Array }> {
  return tracer.startActiveSpan(
    `${subject} send`,
    {
      kind: SpanKind.CLIENT,
      attributes: { 'messaging.system': 'nats', 'messaging.destination.name': subject },
    },
    async (span) => {
      const start = performance.now();
      let errorType: string | undefined;
      try {
        const hdrs = natsHeaders();
        injectTraceContext(hdrs, headerSetter);
        let msg;
        try {
          msg = await nc.request(subject, Buffer.from(JSON.stringify(data)), {
            timeout: options.timeoutMs,
            headers: hdrs,
          });
        } catch (error) {
          throw transportError(subject, error);
        }
        let decoded: { envelope: Reply<M>; body: Uint8Array };
        try {
          decoded = decodeRawReply<M>(msg.data);
        } catch {
          throw new SwitchboardError('server_error', `${subject} sent a malformed reply`);
        }
        const { envelope, body } = decoded;
        if (!envelope.ok)
          throw new SwitchboardError(
            envelope.error.code,
            envelope.error.message,
            envelope.error.errors,
            envelope.error.payload,
          );
        return { meta: envelope.data, body };
      } catch (error) {
        errorType = error instanceof SwitchboardError ? error.code : 'server_error';
        if (error instanceof SwitchboardError) span.setAttribute('switchboard.error_code', error.code);
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw error;
      } finally {
        recordSent(subject, start, errorType);
        span.end();
      }
    },
  );
}
