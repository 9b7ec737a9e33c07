import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import {
  authEventSchema,
  EVENT_STREAM,
  EVENT_SUBJECTS,
  integrationEventSchema,
} from '@switchboard/contracts';
import { ensureEventStream, NATS_CONNECTION } from '@switchboard/messaging';
import { HealthRegistry } from '@switchboard/service-kit';
import { AckPolicy, DeliverPolicy, nanos, type ConsumerMessages, type NatsConnection } from 'nats';
import type { z } from 'zod';
import { OnEventService } from './on-event.service';

/** The orchestrator's own durable consumers: shared by its replicas, independent of the relay's. */
export const AUTH_EVENTS_DURABLE = 'sync-orchestrator-auth';
export const INTEGRATION_EVENTS_DURABLE = 'sync-orchestrator-integrations';

/**
 * Reads the events the orchestrator acts on: `events.v1.auth` starts the post-connection-creation scripts
 * of each new connection; `events.v1.integration` deletes a deleted integration's functions. A message is
 * acknowledged once acted on; a redelivered one does nothing twice (invocation ids derive from the event
 * id; a deletion deletes what is left).
 */
@Injectable()
export class AuthEventsConsumer implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('AuthEvents');
  private readonly consumers: ConsumerMessages[] = [];
  private ready = false;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    private readonly onEvents: OnEventService,
    private readonly health: HealthRegistry,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    this.health.register({
      name: 'auth-events-consumer',
      readinessOnly: true,
      check: async () =>
        this.ready ? { ok: true } : { ok: false, detail: 'JetStream consumer not started' },
    });
    await ensureEventStream(this.nc);
    await this.consume(AUTH_EVENTS_DURABLE, EVENT_SUBJECTS.auth, authEventSchema, async (event) => {
      if (event.operation === 'creation' && event.success) await this.onEvents.connectionCreated(event);
    });
    await this.consume(
      INTEGRATION_EVENTS_DURABLE,
      EVENT_SUBJECTS.integration,
      integrationEventSchema,
      (event) => this.onEvents.integrationDeleted(event),
    );
    this.ready = true;
  }

  onApplicationShutdown(): void {
    for (const messages of this.consumers) messages.stop();
  }

  private async consume<T>(
    durable: string,
    subject: string,
    schema: z.ZodType<T>,
    handle: (event: T) => Promise<unknown>,
  ): Promise<void> {
    const jsm = await this.nc.jetstreamManager();
    try {
      await jsm.consumers.info(EVENT_STREAM.name, durable);
    } catch {
      try {
        await jsm.consumers.add(EVENT_STREAM.name, {
          durable_name: durable,
          filter_subject: subject,
          ack_policy: AckPolicy.Explicit,
          ack_wait: nanos(30_000),
          // Before the first orchestrator started there was nothing of its own to act on.
          deliver_policy: DeliverPolicy.New,
        });
      } catch (error) {
        if (!/already (exists|in use)/i.test((error as Error).message)) throw error;
      }
    }
    const consumer = await this.nc.jetstream().consumers.get(EVENT_STREAM.name, durable);
    const messages = await consumer.consume({ max_messages: 64 });
    this.consumers.push(messages);
    void (async () => {
      for await (const message of messages) {
        const parsed = schema.safeParse(
          (() => {
            try {
              return message.json();
            } catch {
              return undefined;
            }
          })(),
        );
        if (!parsed.success) {
          this.logger.error(`dropping a malformed ${subject} event`);
          message.term();
          continue;
        }
        try {
          await handle(parsed.data);
          message.ack();
        } catch (error) {
          const delay = Math.min(60_000, 1000 * 2 ** Math.min(message.info.redeliveryCount, 6));
          this.logger.warn(
            `${subject} event not handled (try ${message.info.redeliveryCount}), retrying in ${delay} ms: ${(error as Error).message}`,
          );
          message.nak(delay);
        }
      }
    })().catch((error: unknown) =>
      this.logger.error(`${subject} consumer stopped: ${(error as Error).message}`),
    );
  }
}
