import { randomUUID } from 'node:crypto';
import { ACTION_REPLY_BUCKET, type ActionOutputReply } from '@switchboard/contracts';
import { nanos, StorageType, type NatsConnection } from 'nats';

/** Replies above this go through the object store: a NATS message holds 1 MiB by default. */
const INLINE_REPLY_BYTES = 512 * 1024;
/** A backstop: the gateway deletes the object once it has sent it. */
const REPLY_TTL_MS = 15 * 60_000;

/** An action's output for the gateway: inline when small, else stored under a fresh id. */
export async function outputReply(nc: NatsConnection, output: unknown): Promise<ActionOutputReply> {
  const json = JSON.stringify(output ?? null);
  if (Buffer.byteLength(json) <= INLINE_REPLY_BYTES) return { output: output ?? null };
  const store = await nc.jetstream().views.os(ACTION_REPLY_BUCKET, {
    storage: StorageType.File,
    ttl: nanos(REPLY_TTL_MS),
  });
  const name = randomUUID();
  await store.putBlob({ name }, Buffer.from(json));
  return { outputRef: name };
}
