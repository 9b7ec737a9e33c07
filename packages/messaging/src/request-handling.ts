import { Logger } from '@nestjs/common';
import { fieldErrorsFromZod, jsonTooDeepMessage, SwitchboardError, type Reply } from '@switchboard/contracts';
import {
  context,
  extractTraceContext,
  injectTraceContext,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@switchboard/observability';
import { headers as natsHeaders, type MsgHdrs } from 'nats';
import type { z } from 'zod';
import { isDependencyUnavailable } from './dependency-errors';
import { recordProcessed, recordSent } from './metrics';
import { PayloadTooDeep } from './payload-depth';

const logger = new Logger('NatsHandler');
const tracer = trace.getTracer('@switchboard/messaging');

const headerGetter = {
  keys: (h: MsgHdrs | undefined) => (h ? [...h.keys()] : []),
  get: (h: MsgHdrs | undefined, key: string) => (h?.has(key) ? h.get(key) : undefined),
};
const headerSetter = { set: (h: MsgHdrs, key: string, value: string) => h.set(key, value) };
const spanAttributes = (subject: string) => ({
  'messaging.system': 'nats',
  'messaging.destination.name': subject,
});

/**
 * The server side of every request subject (`@NatsHandler` and `serveRaw`): continues the caller's trace
 * from the message headers, reads the payload (`read` may throw a coded error) and validates it with the
 * subject's schema (a bad payload is the caller's bug, answered with `invalid_body`), and turns the
 * outcome into a `Reply` envelope: coded domain errors keep their code, anything else becomes a generic
 * `server_error` (its details are logged, not sent). Records `messaging.process.duration`.
 */
export function handleRequest<S extends z.ZodType, R>(
  subject: string,
  schema: S,
  headers: MsgHdrs | undefined,
  read: () => unknown,
  handler: (payload: z.infer<S>) => Promise<R>,
): Promise<Reply<R>> {
  return context.with(extractTraceContext(headers, headerGetter), () =>
    tracer.startActiveSpan(
      `${subject} process`,
      { kind: SpanKind.SERVER, attributes: spanAttributes(subject) },
      async (span): Promise<Reply<R>> => {
        const start = performance.now();
        let errorType: string | undefined;
        try {
          const input = read();
          if (input instanceof PayloadTooDeep) {
            throw new SwitchboardError(
              'invalid_body',
              jsonTooDeepMessage(`The payload of ${subject}`, input.maxDepth),
            );
          }
          const parsed = schema.safeParse(input);
          if (!parsed.success) {
            throw new SwitchboardError(
              'invalid_body',
              `invalid payload for ${subject}`,
              fieldErrorsFromZod(parsed.error),
            );
          }
          return { ok: true, data: await handler(parsed.data) };
        } catch (error) {
          errorType = error instanceof SwitchboardError ? error.code : 'server_error';
          if (error instanceof SwitchboardError) {
            span.setAttribute('switchboard.error_code', error.code);
            return { ok: false, error: error.toWire() };
          }
          span.recordException(error as Error);
          span.setStatus({ code: SpanStatusCode.ERROR });
          if (isDependencyUnavailable(error)) {
            // Postgres out of reach (restarting, failing over, cut off): nothing half-done, try again.
            errorType = 'service_unavailable';
            span.setAttribute('switchboard.error_code', errorType);
            logger.warn(`${subject} failed, a dependency is not reachable: ${(error as Error)?.message}`);
            return {
              ok: false,
              error: {
                code: 'service_unavailable',
                message: 'A dependency of the service (its database) is not reachable; try again shortly',
              },
            };
          }
          logger.error(`${subject} failed: ${(error as Error)?.stack ?? String(error)}`);
          return { ok: false, error: { code: 'server_error', message: 'internal error' } };
        } finally {
          recordProcessed(subject, start, errorType);
          span.end();
        }
      },
    ),
  );
}

/**
 * The client side of every request (`NatsRequester.call`, `requestUnchecked` and `requestRaw`): a client span whose trace
 * context `send` puts in the message headers it is given, `messaging.client.operation.duration`, and the
 * error code on the span when `send` throws.
 */
export function sendRequest<T>(subject: string, send: (headers: MsgHdrs) => Promise<T>): Promise<T> {
  return tracer.startActiveSpan(
    `${subject} send`,
    { kind: SpanKind.CLIENT, attributes: spanAttributes(subject) },
    async (span) => {
      const start = performance.now();
      let errorType: string | undefined;
      try {
        const hdrs = natsHeaders();
        injectTraceContext(hdrs, headerSetter);
        return await send(hdrs);
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

/** A reply envelope's data, or its error thrown as the coded error it carries. */
export function unwrapReply<T>(subject: string, reply: Reply<T> | undefined): T {
  if (!reply) throw new SwitchboardError('server_error', `${subject} sent an empty reply`);
  if (!reply.ok)
    throw new SwitchboardError(
      reply.error.code,
      reply.error.message,
      reply.error.errors,
      reply.error.payload,
    );
  return reply.data;
}
