import type { WireError } from './errors';

/** Every NATS reply is one of these, so a caller never has to guess whether a payload is an error. */
export type Reply<T> = { ok: true; data: T } | { ok: false; error: WireError };
