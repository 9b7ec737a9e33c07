import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import {
  authEventSchema,
  connectionEventSchema,
  EVENT_CONSUMERS,
  EVENT_SUBJECTS,
  integrationEventSchema,
} from '@switchboard/contracts';
import { NATS_CONNECTION, streamBudgetOf } from '@switchboard/messaging';
import { HealthRegistry } from '@switchboard/service-kit';
import type { ConsumerMessages, NatsConnection } from 'nats';
import { ORCHESTRATOR_ENV, type OrchestratorEnv } from '../config/env';
import { consumeDurably } from '../events/durable-consumer';
import { SyncsService } from '../syncs/syncs.service';
import { OnEventService } from './on-event.service';

/** The orchestrator's own durable consumers: shared by its replicas, independent of the relay's. */
export const AUTH_EVENTS_DURABLE = EVENT_CONSUMERS.orchestratorAuth;
export const INTEGRATION_EVENTS_DURABLE = EVENT_CONSUMERS.orchestratorIntegrations;
export const CONNECTION_EVENTS_DURABLE = EVENT_CONSUMERS.orchestratorConnections;

/**
 * Reads the events the orchestrator acts on: `events.v1.auth` starts the post-connection-creation scripts
 * of each new connection and schedules its syncs; `events.v1.integration` deletes a deleted integration's
 * syncs (schedules, checkpoints, records) and functions; `events.v1.connection` removes a deleted
 * connection's syncs when the orchestrator was not there to hear the vault's pre-deletion call (and finds
 * nothing left to do when it was). A message is acknowledged once acted on; a
 * redelivered one does nothing twice (invocation ids derive from the event id; a deletion deletes what is
 * left).
 */
@Injectable()
export class AuthEventsConsumer implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('AuthEvents');
  private readonly consumers: ConsumerMessages[] = [];
  private ready = false;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    private readonly onEvents: OnEventService,
    private readonly syncs: SyncsService,
    private readonly health: HealthRegistry,
    @Inject(ORCHESTRATOR_ENV) private readonly env: OrchestratorEnv,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    this.health.register({
      name: 'auth-events-consumer',
      readinessOnly: true,
      check: async () =>
        this.ready ? { ok: true } : { ok: false, detail: 'JetStream consumer not started' },
    });
    this.consumers.push(
      await consumeDurably(
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
              new Date(event.occurredAt),
            );
          },
        },
        this.logger,
        streamBudgetOf(this.env),
      ),
    );
    this.consumers.push(
      await consumeDurably(
        this.nc,
        {
          durable: INTEGRATION_EVENTS_DURABLE,
          subject: EVENT_SUBJECTS.integration,
          schema: integrationEventSchema,
          what: 'integration event',
          handle: async (event) => {
            // Schedules first: a sync row whose function is gone could no longer be run, only orphaned.
            await this.syncs.integrationDeleted(event.environmentId, event.providerConfigKey);
            await this.onEvents.integrationDeleted(event);
          },
        },
        this.logger,
        streamBudgetOf(this.env),
      ),
    );
    this.consumers.push(
      await consumeDurably(
        this.nc,
        {
          durable: CONNECTION_EVENTS_DURABLE,
          subject: EVENT_SUBJECTS.connection,
          schema: connectionEventSchema,
          what: 'connection event',
          handle: async (event) => {
            await this.syncs.connectionDeleted(
              event.environmentId,
              event.providerConfigKey,
              event.connectionId,
              new Date(event.occurredAt),
            );
          },
        },
        this.logger,
        streamBudgetOf(this.env),
      ),
    );
    this.ready = true;
  }

  onApplicationShutdown(): void {
    for (const messages of this.consumers) messages.stop();
  }
}
