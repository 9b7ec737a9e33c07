import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { authEventSchema, EVENT_CONSUMERS, EVENT_STREAM, EVENT_SUBJECTS } from '@switchboard/contracts';
import { ensureEventStream, NATS_CONNECTION } from '@switchboard/messaging';
import { HealthRegistry } from '@switchboard/service-kit';
import { AckPolicy, DeliverPolicy, nanos, type ConsumerMessages, type NatsConnection } from 'nats';
import { OnEventService } from './on-event.service';

/** The orchestrator's own durable consumer: shared by its replicas, independent of the relay's. */
export const AUTH_EVENTS_DURABLE = EVENT_CONSUMERS.orchestratorAuth;

/**
 * Reads `events.v1.auth` and starts the post-connection-creation scripts of each new connection. A
 * message is acknowledged once the scripts' workflows are started; a redelivered one starts nothing twice
 * (the invocation ids derive from the event id).
 */
@Injectable()
export class AuthEventsConsumer implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('AuthEvents');
  private messages: ConsumerMessages | undefined;
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
    const jsm = await this.nc.jetstreamManager();
    try {
      await jsm.consumers.info(EVENT_STREAM.name, AUTH_EVENTS_DURABLE);
    } catch {
      try {
        await jsm.consumers.add(EVENT_STREAM.name, {
          durable_name: AUTH_EVENTS_DURABLE,
          filter_subject: EVENT_SUBJECTS.auth,
          ack_policy: AckPolicy.Explicit,
          ack_wait: nanos(30_000),
          // Connections created before the first orchestrator started have no scripts to run yet.
          deliver_policy: DeliverPolicy.New,
        });
      } catch (error) {
        if (!/already (exists|in use)/i.test((error as Error).message)) throw error;
      }
    }
    const consumer = await this.nc.jetstream().consumers.get(EVENT_STREAM.name, AUTH_EVENTS_DURABLE);
    this.messages = await consumer.consume({ max_messages: 64 });
    this.ready = true;
    void (async () => {
      for await (const message of this.messages!) {
        const parsed = authEventSchema.safeParse(
          (() => {
            try {
              return message.json();
            } catch {
              return undefined;
            }
          })(),
        );
        if (!parsed.success) {
          this.logger.error('dropping a malformed auth event');
          message.term();
          continue;
        }
        const event = parsed.data;
        if (event.operation !== 'creation' || !event.success) {
          message.ack();
          continue;
        }
        try {
          await this.onEvents.connectionCreated(event);
          message.ack();
        } catch (error) {
          const delay = Math.min(60_000, 1000 * 2 ** Math.min(message.info.redeliveryCount, 6));
          this.logger.warn(
            `post-connection-creation scripts not started (try ${message.info.redeliveryCount}), retrying in ${delay} ms: ${(error as Error).message}`,
          );
          message.nak(delay);
        }
      }
    })().catch((error: unknown) =>
      this.logger.error(`auth events consumer stopped: ${(error as Error).message}`),
    );
  }

  onApplicationShutdown(): void {
    this.messages?.stop();
  }
}
