import { z } from 'zod';

/**
 * One request subject of the NATS request/reply seam: the subject (unchanged on the wire), the schema
 * its handler validates the request with, and the schema of what the handler answers. The caller
 * (`NatsRequester.call`) and the handler (`@NatsHandler`) both take this definition, so the payload and
 * reply types of each hop are the same on both ends and checked by the compiler.
 */
export interface NatsRequestDef<
  Req extends z.ZodType = z.ZodType,
  Rep extends z.ZodType = z.ZodType,
  S extends string = string,
> {
  readonly subject: S;
  readonly request: Req;
  readonly reply: Rep;
  /**
   * Whether the caller validates the request before sending it (default true). Off only where the
   * payload is bulk data that the handler validates anyway (a batch of records), so the caller does
   * not walk it twice.
   */
  readonly validateOnSend?: boolean;
}

/** What a caller sends for a definition (before the handler's defaults and transforms). */
export type NatsRequestOf<D extends NatsRequestDef> = z.input<D['request']>;
/** What a handler receives for a definition (after validation). */
export type NatsPayloadOf<D extends NatsRequestDef> = z.output<D['request']>;
/** What a handler answers and its caller receives. */
export type NatsReplyOf<D extends NatsRequestDef> = z.output<D['reply']>;

export function natsRequest<S extends string, Req extends z.ZodType, Rep extends z.ZodType>(
  def: NatsRequestDef<Req, Rep, S>,
): NatsRequestDef<Req, Rep, S> {
  return def;
}

/** The service that answers a request subject: the owner of its context (`vault.v1.…` → connections-vault). */
export const NATS_CONTEXT_OWNERS = {
  auth: 'auth-connect',
  vault: 'connections-vault',
  orchestrator: 'sync-orchestrator',
  relay: 'webhook-relay',
  functions: 'functions-runtime',
} as const;
export type NatsContext = keyof typeof NATS_CONTEXT_OWNERS;

export function natsSubjectOwner(subject: string): (typeof NATS_CONTEXT_OWNERS)[NatsContext] | undefined {
  const context = subject.split('.', 1)[0] as NatsContext;
  return Object.hasOwn(NATS_CONTEXT_OWNERS, context) ? NATS_CONTEXT_OWNERS[context] : undefined;
}

/** The reply of a command that answers only that it was done. */
export const successReplySchema = z.object({ success: z.literal(true) });
