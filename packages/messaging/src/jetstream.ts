import { EVENT_STREAM } from '@switchboard/contracts';
import { injectTraceContext } from '@switchboard/observability';
import {
  headers as natsHeaders,
  RetentionPolicy,
  StorageType,
  type MsgHdrs,
  type NatsConnection,
  type PubAck,
} from 'nats';

const headerSetter = { set: (h: MsgHdrs, key: string, value: string) => h.set(key, value) };

/**
 * Creates the event stream if it is missing (idempotent; every publisher and consumer calls it at boot,
 * so services can start in any order). File storage: events survive a NATS restart.
 */
export async function ensureEventStream(nc: NatsConnection): Promise<void> {
  const jsm = await nc.jetstreamManager();
  try {
    await jsm.streams.info(EVENT_STREAM.name);
  } catch {
    try {
      await jsm.streams.add({
        name: EVENT_STREAM.name,
        subjects: [...EVENT_STREAM.subjects],
        storage: StorageType.File,
        retention: RetentionPolicy.Limits,
        max_age: 7 * 24 * 3600 * 1_000_000_000, // nanoseconds: a week to recover from any outage
        duplicate_window: 10 * 60 * 1_000_000_000,
      });
    } catch (error) {
      // Another replica created it between our two calls.
      if (!/already in use/i.test((error as Error).message)) throw error;
    }
  }
}

/**
 * Publishes an event durably: resolves only once JetStream has stored it. `id` becomes `Nats-Msg-Id`,
 * so publishing the same event twice inside the duplicate window stores it once.
 */
export async function publishEvent(
  nc: NatsConnection,
  subject: string,
  id: string,
  payload: unknown,
): Promise<PubAck> {
  const hdrs = natsHeaders();
  injectTraceContext(hdrs, headerSetter);
  return nc.jetstream().publish(subject, Buffer.from(JSON.stringify(payload)), { msgID: id, headers: hdrs });
}
