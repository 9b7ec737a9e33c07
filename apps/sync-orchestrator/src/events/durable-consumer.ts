import type { Logger } from '@nestjs/common';
import {
  EVENT_STREAM,
  jsonDepthExceeds,
  MESSAGE_JSON_MAX_DEPTH,
  SwitchboardError,
} from '@switchboard/contracts';
import { ensureDurableConsumer, ensureEventStream, type StreamBudget } from '@switchboard/messaging';
import type { ConsumerMessages, NatsConnection } from 'nats';
import type { z } from 'zod';
import { recordDeadLetter } from '../metrics';

/**
 * How many times one event is handed out at most. Retries wait 1 s doubling to 5 min, so an event
 * failing on every try (Temporal or Postgres down) is given up on after about 2.5 hours: logged as a
 * dead letter with its id (`switchboard.events.dead_lettered`), never retried again.
 */
export const EVENT_MAX_DELIVER = 40;

export interface DurableConsumerSpec<S extends z.ZodType> {
  /** The durable name: shared by the orchestrator's replicas, independent of other services' consumers. */
  durable: string;
  subject: string;
  schema: S;
  /** What the event is called in logs. */
  what: string;
  /** Resolves once the event's work is durably started; a throw is retried with a growing delay. */
  handle: (event: z.infer<S>) => Promise<void>;
}

/**
 * Reads one subject of the event stream with a durable consumer: a message is acknowledged once its
 * handler resolved, retried (nak with a growing delay) when it threw, and ended (term, logged as a dead
 * letter) when it does not parse, nests deeper than a message may, fails for a reason a retry cannot
 * change (a coded `invalid_body`, a stack overflow), or failed on its last of {@link EVENT_MAX_DELIVER}
 * tries. Events published while no orchestrator runs wait in the stream. Returns the running consumer.
 */
export async function consumeDurably<S extends z.ZodType>(
  nc: NatsConnection,
  spec: DurableConsumerSpec<S>,
  logger: Logger,
  /** The event stream's settings (`streamBudgetOf(env)`), so that a boot leaves them as configured. */
  budget: StreamBudget,
): Promise<ConsumerMessages> {
  await ensureEventStream(nc, budget);
  const consumer = await ensureDurableConsumer(nc, {
    stream: EVENT_STREAM.name,
    durable: spec.durable,
    subject: spec.subject,
    // What happened before the first orchestrator started has nothing to run yet.
    from: 'new',
    ackWaitMs: 30_000,
    maxDeliver: EVENT_MAX_DELIVER,
  });
  const messages = await consumer.consume({ max_messages: 64 });
  const deadLetter = (
    reason: 'malformed' | 'permanent' | 'exhausted',
    id: string,
    why: string,
    term: () => void,
  ) => {
    recordDeadLetter(spec.durable, reason);
    logger.error(`dead-lettering ${spec.what} ${id} (${reason}): ${why.slice(0, 500)}`);
    term();
  };
  void (async () => {
    for await (const message of messages) {
      const seq = `#${message.seq}`;
      let body: unknown;
      try {
        // Parsing is safe at any depth; validating (a recursive walk) 10,000 levels is not.
        body = jsonDepthExceeds(message.data, MESSAGE_JSON_MAX_DEPTH) ? undefined : message.json();
      } catch {
        body = undefined;
      }
      const parsed = spec.schema.safeParse(body);
      if (!parsed.success) {
        deadLetter('malformed', seq, 'not a valid event', () => message.term());
        continue;
      }
      try {
        await spec.handle(parsed.data);
        message.ack();
      } catch (error) {
        const attempt = message.info.redeliveryCount;
        const why = (error as Error)?.message ?? String(error);
        const id = `${seq} ${(parsed.data as { id?: unknown }).id ?? ''}`.trim();
        if (
          error instanceof RangeError ||
          (error instanceof SwitchboardError && error.code === 'invalid_body')
        ) {
          deadLetter('permanent', id, why, () => message.term());
        } else if (attempt >= EVENT_MAX_DELIVER) {
          deadLetter('exhausted', id, `not handled after ${attempt} tries: ${why}`, () => message.term());
        } else {
          const delay = Math.min(300_000, 1000 * 2 ** Math.min(attempt, 9));
          logger.warn(`${spec.what} not handled (try ${attempt}), retrying in ${delay} ms: ${why}`);
          message.nak(delay);
        }
      }
    }
  })().catch((error: unknown) => logger.error(`${spec.what} consumer stopped: ${(error as Error).message}`));
  return messages;
}
