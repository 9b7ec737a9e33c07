import type { Logger } from '@nestjs/common';
import { EVENT_STREAM } from '@switchboard/contracts';
import { ensureDurableConsumer, ensureEventStream } from '@switchboard/messaging';
import type { ConsumerMessages, NatsConnection } from 'nats';
import type { z } from 'zod';

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
 * handler resolved, retried (nak with a growing delay) when it threw, and dropped (term) when it does not
 * parse. Events published while no orchestrator runs wait in the stream. Returns the running consumer.
 */
export async function consumeDurably<S extends z.ZodType>(
  nc: NatsConnection,
  spec: DurableConsumerSpec<S>,
  logger: Logger,
): Promise<ConsumerMessages> {
  await ensureEventStream(nc);
  const consumer = await ensureDurableConsumer(nc, {
    stream: EVENT_STREAM.name,
    durable: spec.durable,
    subject: spec.subject,
    // What happened before the first orchestrator started has nothing to run yet.
    from: 'new',
    ackWaitMs: 30_000,
  });
  const messages = await consumer.consume({ max_messages: 64 });
  void (async () => {
    for await (const message of messages) {
      let body: unknown;
      try {
        body = message.json();
      } catch {
        body = undefined;
      }
      const parsed = spec.schema.safeParse(body);
      if (!parsed.success) {
        logger.error(`dropping a malformed ${spec.what}`);
        message.term();
        continue;
      }
      try {
        await spec.handle(parsed.data);
        message.ack();
      } catch (error) {
        const delay = Math.min(60_000, 1000 * 2 ** Math.min(message.info.redeliveryCount, 6));
        logger.warn(
          `${spec.what} not handled (try ${message.info.redeliveryCount}), retrying in ${delay} ms: ${(error as Error).message}`,
        );
        message.nak(delay);
      }
    }
  })().catch((error: unknown) => logger.error(`${spec.what} consumer stopped: ${(error as Error).message}`));
  return messages;
}
