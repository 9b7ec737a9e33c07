import { Logger } from '@nestjs/common';
import { Ctx, MessagePattern, Payload, type NatsContext } from '@nestjs/microservices';
import { fieldErrorsFromZod, SwitchboardError, type Reply } from '@switchboard/contracts';
import { context, extractTraceContext, SpanKind, SpanStatusCode, trace } from '@switchboard/observability';
import type { MsgHdrs } from 'nats';
import type { z } from 'zod';
import { recordProcessed } from './metrics';

const logger = new Logger('NatsHandler');
const tracer = trace.getTracer('@switchboard/messaging');

const headerGetter = {
  keys: (h: MsgHdrs | undefined) => (h ? [...h.keys()] : []),
  get: (h: MsgHdrs | undefined, key: string) => (h?.has(key) ? h.get(key) : undefined),
};

/**
 * Marks a method as the handler of a NATS request subject. The wrapper continues the caller's trace from
 * the message headers, validates the payload with the subject's schema (a bad payload is the caller's
 * bug, answered with `invalid_body`), and turns the outcome into a `Reply` envelope: coded domain errors
 * keep their code, anything else becomes a generic `server_error` (its details are logged, not sent).
 */
export function NatsHandler<S extends z.ZodType>(subject: string, schema: S) {
  return <M extends (payload: z.infer<S>) => Promise<unknown>>(
    target: object,
    key: string | symbol,
    descriptor: TypedPropertyDescriptor<M>,
  ): void => {
    const original = descriptor.value;
    if (!original) throw new Error(`@NatsHandler(${subject}) must decorate a method`);
    const wrapped = async function (
      this: unknown,
      data: unknown,
      ctx?: NatsContext,
    ): Promise<Reply<unknown>> {
      const parent = extractTraceContext(ctx?.getHeaders?.() as MsgHdrs | undefined, headerGetter);
      return context.with(parent, () =>
        tracer.startActiveSpan(
          `${subject} process`,
          {
            kind: SpanKind.SERVER,
            attributes: { 'messaging.system': 'nats', 'messaging.destination.name': subject },
          },
          async (span) => {
            const start = performance.now();
            let errorType: string | undefined;
            try {
              const parsed = schema.safeParse(data);
              if (!parsed.success) {
                throw new SwitchboardError(
                  'invalid_body',
                  `invalid payload for ${subject}`,
                  fieldErrorsFromZod(parsed.error),
                );
              }
              const result = await original.call(this, parsed.data);
              return { ok: true as const, data: result ?? null };
            } catch (error) {
              errorType = error instanceof SwitchboardError ? error.code : 'server_error';
              if (error instanceof SwitchboardError) {
                span.setAttribute('switchboard.error_code', error.code);
                return { ok: false as const, error: error.toWire() };
              }
              span.recordException(error as Error);
              span.setStatus({ code: SpanStatusCode.ERROR });
              logger.error(`${subject} failed: ${(error as Error)?.stack ?? String(error)}`);
              return {
                ok: false as const,
                error: { code: 'server_error' as const, message: 'internal error' },
              };
            } finally {
              recordProcessed(subject, start, errorType);
              span.end();
            }
          },
        ),
      );
    };
    Object.defineProperty(wrapped, 'name', { value: original.name });
    descriptor.value = wrapped as unknown as M;
    // Without parameter metadata Nest passes only the payload; the context carries the headers.
    Payload()(target, key, 0);
    Ctx()(target, key, 1);
    MessagePattern(subject)(target, key, descriptor);
  };
}
