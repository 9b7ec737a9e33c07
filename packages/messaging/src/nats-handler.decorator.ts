import { Ctx, MessagePattern, Payload, type NatsContext } from '@nestjs/microservices';
import {
  healthSubject,
  NATS_REQUESTS,
  natsRequestsServedBy,
  type NatsPayloadOf,
  type NatsReplyOf,
  type NatsRequestDef,
  type Reply,
  type ServiceName,
} from '@switchboard/contracts';
import type { MsgHdrs } from 'nats';
import { handleRequest } from './request-handling';

/** Every subject a `@NatsHandler` in this process was declared for, with its definition. */
const handled = new Map<string, NatsRequestDef>();

/**
 * The subjects the `@NatsHandler`s of the classes loaded so far answer (decorators run when a class is
 * defined, so loading a service's handler files is enough). Lets a test prove that each subject a
 * service owns has a handler.
 */
export function natsHandlerDefinitions(): ReadonlyMap<string, NatsRequestDef> {
  return handled;
}

export interface NatsHandlerCoverage {
  /** Subjects a handler answers with a definition that is not the contracts' one (or that they lack). */
  withoutDefinition: string[];
  /** Subjects the service owns in the contracts that no handler answers. */
  withoutHandler: string[];
}

/**
 * Compares the handlers loaded in this process with the request definitions `service` owns in
 * `@switchboard/contracts` (NATS_REQUESTS): both lists are empty when every handler answers a defined
 * subject with its definition and every defined subject has a handler.
 */
export function natsHandlerCoverage(service: ServiceName): NatsHandlerCoverage {
  const defined = new Set<NatsRequestDef>(NATS_REQUESTS);
  const own = healthSubject(service);
  return {
    withoutDefinition: [...handled]
      .filter(([subject, def]) => subject !== own && !defined.has(def))
      .map(([subject]) => subject)
      .sort(),
    withoutHandler: natsRequestsServedBy(service)
      .filter((def) => handled.get(def.subject) !== def)
      .map((def) => def.subject)
      .sort(),
  };
}

/**
 * Marks a method as the handler of a NATS request subject, given the subject's definition from
 * `@switchboard/contracts`: the method receives the request as the definition's schema parsed it and
 * must answer its reply type. The wrapper continues the caller's trace from the message headers,
 * validates the payload with the definition's request schema (a bad payload is the caller's bug,
 * answered with `invalid_body`), and turns the outcome into a `Reply` envelope: coded domain errors keep
 * their code, anything else becomes a generic `server_error` (its details are logged, not sent).
 */
export function NatsHandler<D extends NatsRequestDef>(def: D) {
  const { subject, request: schema } = def;
  return <M extends (payload: NatsPayloadOf<D>) => Promise<NatsReplyOf<D>>>(
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
        async (payload) => (await original.call(this, payload as NatsPayloadOf<D>)) ?? null,
      );
    };
    Object.defineProperty(wrapped, 'name', { value: original.name });
    descriptor.value = wrapped as unknown as M;
    // Without parameter metadata Nest passes only the payload; the context carries the headers.
    Payload()(target, key, 0);
    Ctx()(target, key, 1);
    MessagePattern(subject)(target, key, descriptor);
    handled.set(subject, def);
  };
}
