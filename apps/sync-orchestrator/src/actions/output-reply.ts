import { ACTION_REPLY_BUCKET, type ActionOutputReply } from '@switchboard/contracts';
import { fitsInline, PayloadStore } from '@switchboard/messaging';
import type { NatsConnection } from 'nats';

/** Replies above this go through the object store: a NATS message holds 1 MiB by default. */
const INLINE_REPLY_BYTES = 512 * 1024;
/** A backstop: the gateway deletes the object once it has sent it. */
const REPLY_TTL_MS = 15 * 60_000;

/** An action's output for the gateway: inline when small, else stored under a fresh id. */
export async function outputReply(nc: NatsConnection, output: unknown): Promise<ActionOutputReply> {
  const json = JSON.stringify(output ?? null);
  if (fitsInline(json, INLINE_REPLY_BYTES)) return { output: output ?? null };
  const store = new PayloadStore(nc, ACTION_REPLY_BUCKET, { storage: 'file', ttlMs: REPLY_TTL_MS });
  const { name } = await store.put(Buffer.from(json));
  return { outputRef: name };
}
