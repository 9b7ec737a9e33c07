import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { EVENT_CONSUMERS, EVENT_SUBJECTS, syncWebhookEventSchema } from '@switchboard/contracts';
import { NATS_CONNECTION, streamBudgetOf } from '@switchboard/messaging';
import { HealthRegistry } from '@switchboard/service-kit';
import type { ConsumerMessages, NatsConnection } from 'nats';
import { ORCHESTRATOR_ENV, type OrchestratorEnv } from '../config/env';
import { consumeDurably } from '../events/durable-consumer';
import { SyncWebhooksService } from './sync-webhooks.service';

export const SYNC_WEBHOOKS_DURABLE = EVENT_CONSUMERS.orchestratorSyncWebhook;

/**
 * Reads `events.v1.sync-webhook` (webhook-relay publishes one per routed provider webhook) and starts the
 * matching syncs' onWebhook runs. The message is acknowledged once their workflows are started; while no
 * orchestrator runs, the events wait in the stream.
 */
@Injectable()
export class SyncWebhooksConsumer implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('SyncWebhooks');
  private messages: ConsumerMessages | undefined;
  private ready = false;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    private readonly webhooks: SyncWebhooksService,
    private readonly health: HealthRegistry,
    @Inject(ORCHESTRATOR_ENV) private readonly env: OrchestratorEnv,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    this.health.register({
      name: 'sync-webhooks-consumer',
      readinessOnly: true,
      check: async () =>
        this.ready ? { ok: true } : { ok: false, detail: 'JetStream consumer not started' },
    });
    this.messages = await consumeDurably(
      this.nc,
      {
        durable: SYNC_WEBHOOKS_DURABLE,
        subject: EVENT_SUBJECTS.syncWebhook,
        schema: syncWebhookEventSchema,
        what: 'sync webhook',
        handle: async (event) => {
          await this.webhooks.dispatch(event);
        },
      },
      this.logger,
      streamBudgetOf(this.env),
    );
    this.ready = true;
  }

  onApplicationShutdown(): void {
    this.messages?.stop();
  }
}
