import { EVENT_STREAM } from '@switchboard/contracts';
import { extractTraceContext, injectTraceContext, type Context } from '@switchboard/observability';
import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  headers as natsHeaders,
  nanos,
  RetentionPolicy,
  StorageType,
  type Consumer,
  type MsgHdrs,
  type NatsConnection,
  type PubAck,
} from 'nats';

const headerSetter = { set: (h: MsgHdrs, key: string, value: string) => h.set(key, value) };
const headerGetter = {
  keys: (h: MsgHdrs | undefined) => (h ? [...h.keys()] : []),
  get: (h: MsgHdrs | undefined, key: string) => (h?.has(key) ? h.get(key) : undefined),
};

/**
 * The trace context a stored event was published in (publishEvent puts it in the message's headers): work
 * done for the event under it joins the publisher's trace, and is sampled, or not, with it.
 */
export function eventTraceContext(headers: MsgHdrs | undefined): Context {
  return extractTraceContext(headers, headerGetter);
}

/**
 * How much disk one stream may hold, so a flood (of public webhooks, say) cannot fill the NATS server's
 * disk: at `maxBytes` JetStream drops the oldest messages (`discard: 'old'`: with limits retention most of
 * them were delivered long ago, kept only for the week of replay) or refuses new ones (`'new'`: publishers
 * get an error and retry later; nothing stored is lost, but ingestion stops until consumers catch up).
 */
export interface StreamBudget {
  maxBytes: number;
  discard: 'old' | 'new';
  /** Copies kept on a NATS cluster (`num_replicas`, `SWITCHBOARD_STREAM_REPLICAS`); 1 when absent. */
  replicas?: number;
}

/** What each stream holds unless configured otherwise (`SWITCHBOARD_STREAM_MAX_BYTES`, `_DISCARD`, `_REPLICAS`). */
export const DEFAULT_STREAM_BUDGET: StreamBudget = { maxBytes: 1024 ** 3, discard: 'old', replicas: 1 };

/** The stream settings of a service's configuration (every service sharing a stream must agree). */
export function streamBudgetOf(env: {
  SWITCHBOARD_STREAM_MAX_BYTES: number;
  SWITCHBOARD_STREAM_DISCARD: 'old' | 'new';
  SWITCHBOARD_STREAM_REPLICAS: number;
}): StreamBudget {
  return {
    maxBytes: env.SWITCHBOARD_STREAM_MAX_BYTES,
    discard: env.SWITCHBOARD_STREAM_DISCARD,
    replicas: env.SWITCHBOARD_STREAM_REPLICAS,
  };
}

export interface StreamSpec {
  name: string;
  subjects: readonly string[];
  /** Seconds a message is kept at most. */
  maxAgeSeconds: number;
  /** Seconds within which a repeated `Nats-Msg-Id` is stored once. */
  duplicateWindowSeconds: number;
}

const NANOS = 1_000_000_000;

/**
 * Creates a file-backed, limits-retention stream if it is missing and brings an existing one's byte budget
 * and replica count in line with the configuration (idempotent; every publisher and consumer calls it at boot, so services
 * start in any order). Every service sharing a stream must be given the same budget, or each boot moves it.
 */
export async function ensureStream(
  nc: NatsConnection,
  spec: StreamSpec,
  budget: StreamBudget = DEFAULT_STREAM_BUDGET,
): Promise<void> {
  const jsm = await nc.jetstreamManager();
  const discard = budget.discard === 'old' ? DiscardPolicy.Old : DiscardPolicy.New;
  const replicas = budget.replicas ?? 1;
  let existing;
  try {
    existing = await jsm.streams.info(spec.name);
  } catch {
    try {
      await jsm.streams.add({
        name: spec.name,
        subjects: [...spec.subjects],
        storage: StorageType.File,
        retention: RetentionPolicy.Limits,
        max_age: spec.maxAgeSeconds * NANOS,
        duplicate_window: spec.duplicateWindowSeconds * NANOS,
        max_bytes: budget.maxBytes,
        discard,
        num_replicas: replicas,
      });
      return;
    } catch (error) {
      // Another replica created it between our two calls.
      if (!/already in use/i.test((error as Error).message)) throw budgetError(spec.name, budget, error);
      existing = await jsm.streams.info(spec.name);
    }
  }
  if (
    existing.config.max_bytes !== budget.maxBytes ||
    existing.config.discard !== discard ||
    existing.config.num_replicas !== replicas
  ) {
    await jsm.streams
      .update(spec.name, { max_bytes: budget.maxBytes, discard, num_replicas: replicas })
      .catch((error: unknown) => {
        throw budgetError(spec.name, budget, error);
      });
  }
}

/** Say which variable to change when the server cannot reserve the bytes or keep the copies asked for. */
function budgetError(stream: string, budget: StreamBudget, error: unknown): Error {
  const message = (error as Error).message;
  if (/insufficient/i.test(message)) {
    return new Error(
      `JetStream cannot reserve ${budget.maxBytes} bytes for stream ${stream} (${message}); ` +
        'lower SWITCHBOARD_STREAM_MAX_BYTES or give the NATS server more storage',
    );
  }
  if (/replicas|clustered/i.test(message)) {
    return new Error(
      `JetStream cannot keep ${budget.replicas ?? 1} copies of stream ${stream} (${message}); ` +
        'SWITCHBOARD_STREAM_REPLICAS must not exceed the servers of the NATS cluster (1 without a cluster)',
    );
  }
  return error as Error;
}

/** The event stream: a week to recover from any outage, ten minutes of publish de-duplication. */
export function ensureEventStream(nc: NatsConnection, budget?: StreamBudget): Promise<void> {
  return ensureStream(
    nc,
    { ...EVENT_STREAM, maxAgeSeconds: 7 * 24 * 3600, duplicateWindowSeconds: 10 * 60 },
    budget,
  );
}

export interface DurableConsumerConfig {
  stream: string;
  /** The durable name: every replica of the service shares it (each message goes to one of them). */
  durable: string;
  subject: string;
  /**
   * Where a consumer created now starts: `all` stored messages (what was published before the service
   * first ran is still its work) or only `new` ones. An existing consumer keeps its position.
   */
  from: 'all' | 'new';
  /** How long JetStream waits for an ack before handing a message out again. */
  ackWaitMs: number;
  /** Messages handed out and not yet acknowledged, at most (JetStream's default when absent). */
  maxAckPending?: number;
  /**
   * How many times one message is handed out at most (`max_deliver`); required so that no consumer
   * retries a message forever. The consumer ends a message that fails its last try itself (a dead letter
   * where a user would look, then `term`): after it JetStream does not hand it out again.
   */
  maxDeliver: number;
}

/**
 * The durable consumer of `spec`, created with explicit acks when it is missing (a replica creating it at
 * the same moment is fine) and brought in line with the configuration when its ack wait or pending limit
 * changed; idempotent, every replica calls it at boot.
 */
export async function ensureDurableConsumer(
  nc: NatsConnection,
  spec: DurableConsumerConfig,
): Promise<Consumer> {
  const jsm = await nc.jetstreamManager();
  const settings = {
    ack_policy: AckPolicy.Explicit,
    ack_wait: nanos(spec.ackWaitMs),
    max_deliver: spec.maxDeliver,
    ...(spec.maxAckPending !== undefined ? { max_ack_pending: spec.maxAckPending } : {}),
  };
  let existing;
  try {
    existing = await jsm.consumers.info(spec.stream, spec.durable);
  } catch {
    existing = undefined;
  }
  if (!existing) {
    try {
      await jsm.consumers.add(spec.stream, {
        ...settings,
        durable_name: spec.durable,
        filter_subject: spec.subject,
        deliver_policy: spec.from === 'all' ? DeliverPolicy.All : DeliverPolicy.New,
      });
    } catch (error) {
      // Another replica created it between our two calls.
      if (!/already (exists|in use)/i.test((error as Error).message)) throw error;
    }
  } else if (
    existing.config.ack_wait !== settings.ack_wait ||
    existing.config.max_deliver !== settings.max_deliver ||
    (settings.max_ack_pending !== undefined && existing.config.max_ack_pending !== settings.max_ack_pending)
  ) {
    await jsm.consumers.update(spec.stream, spec.durable, settings);
  }
  return nc.jetstream().consumers.get(spec.stream, spec.durable);
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
