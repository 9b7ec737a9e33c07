import { Ctx, MessagePattern, Payload, type NatsContext } from '@nestjs/microservices';
import type { Reply } from '@switchboard/contracts';
import type { MsgHdrs } from 'nats';
import type { z } from 'zod';
import { handleRequest } from './request-handling';

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
    const wrapped = function (this: unknown, data: unknown, ctx?: NatsContext): Promise<Reply<unknown>> {
      const headers = ctx?.getHeaders?.() as MsgHdrs | undefined;
      return handleRequest(
        subject,
        schema,
        headers,
        () => data,
        async (payload) => (await original.call(this, payload)) ?? null,
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
