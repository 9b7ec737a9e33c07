import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { authEventSchema, EVENT_SUBJECTS } from '@switchboard/contracts';
import { NATS_CONNECTION } from '@switchboard/messaging';
import { HealthRegistry } from '@switchboard/service-kit';
import type { ConsumerMessages, NatsConnection } from 'nats';
import { consumeDurably } from '../events/durable-consumer';
import { SyncsService } from '../syncs/syncs.service';
import { OnEventService } from './on-event.service';

/** The orchestrator's own durable consumer: shared by its replicas, independent of the relay's. */
export const AUTH_EVENTS_DURABLE = 'sync-orchestrator-auth';

/**
 * Reads `events.v1.auth` and starts the post-connection-creation scripts of each new connection and schedules its syncs. A
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
    private readonly syncs: SyncsService,
    private readonly health: HealthRegistry,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    this.health.register({
      name: 'auth-events-consumer',
      readinessOnly: true,
      check: async () =>
        this.ready ? { ok: true } : { ok: false, detail: 'JetStream consumer not started' },
    });
    this.messages = await consumeDurably(
      this.nc,
      {
        durable: AUTH_EVENTS_DURABLE,
        subject: EVENT_SUBJECTS.auth,
        schema: authEventSchema,
        what: 'auth event',
        handle: async (event) => {
          if (event.operation !== 'creation' || !event.success) return;
          await this.onEvents.connectionCreated(event);
          // The integration's syncs get their schedules on the new connection (idempotent on redelivery).
          await this.syncs.connectionCreated(
            event.environmentId,
            event.providerConfigKey,
            event.connectionId,
          );
        },
      },
      this.logger,
    );
    this.ready = true;
  }

  onApplicationShutdown(): void {
    this.messages?.stop();
  }
}
