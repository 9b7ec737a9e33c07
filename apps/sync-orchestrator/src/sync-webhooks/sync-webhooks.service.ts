import { Inject, Injectable, Logger } from '@nestjs/common';
import type { SyncWebhookEvent } from '@switchboard/contracts';
import type { OrchestratorDb } from '@switchboard/db';
import { NatsRequester } from '@switchboard/messaging';
import { ActionsService } from '../actions/actions.service';
import { ORCHESTRATOR_ENV, type OrchestratorEnv } from '../config/env';
import { ORCHESTRATOR_DB } from '../database/database.module';
import { storedConfig, type FunctionWithVersion } from '../functions/function-config';
import { callerOfEnvironment } from '../functions/environment-caller';
import { invocationIdFor } from '../on-event/on-event.service';

/** Attempts of one onWebhook run after the first (nobody waits for it; Nango retries webhook tasks too). */
const WEBHOOK_RETRIES = 2;

/** Whether a sync subscribed to a webhook of one of these types (`*` takes every webhook). */
export function subscribes(subscriptions: readonly string[], types: readonly string[]): boolean {
  return subscriptions.some((s) => s === '*' || types.includes(s));
}

/**
 * The `onWebhook` handlers of syncs. For a provider webhook the relay routed to connections, every enabled
 * sync of the integration whose `webhookSubscriptions` match runs its handler once per connection, as
 * a Temporal workflow whose id derives from (webhook, sync, connection): a redelivered event starts
 * nothing twice.
 */
@Injectable()
export class SyncWebhooksService {
  private readonly logger = new Logger('SyncWebhooks');

  constructor(
    @Inject(ORCHESTRATOR_DB) private readonly db: OrchestratorDb,
    private readonly actions: ActionsService,
    private readonly nats: NatsRequester,
    @Inject(ORCHESTRATOR_ENV) private readonly env: OrchestratorEnv,
  ) {}

  /** The syncs of an integration that take this webhook. */
  async subscribedSyncs(
    environmentId: number,
    providerConfigKey: string,
    types: readonly string[],
  ): Promise<FunctionWithVersion[]> {
    const syncs = await this.db.deployedFunction.findMany({
      where: { environmentId, providerConfigKey, type: 'sync', enabled: true },
      include: { currentVersion: true },
      orderBy: { name: 'asc' },
    });
    return syncs.filter(
      (fn) => fn.currentVersion && subscribes(storedConfig(fn).webhookSubscriptions ?? [], types),
    );
  }

  /** Starts the runs one routed webhook causes; resolves with how many were started now. */
  async dispatch(event: SyncWebhookEvent): Promise<number> {
    const syncs = await this.subscribedSyncs(
      event.environmentId,
      event.providerConfigKey,
      event.subscriptionTypes,
    );
    if (syncs.length === 0) return 0;
    const caller = await callerOfEnvironment(this.nats, event.environmentId);
    if (!caller) return 0; // the environment is gone
    let started = 0;
    for (const fn of syncs) {
      const config = storedConfig(fn);
      for (const connectionId of event.connectionIds) {
        const fresh = await this.actions.startOnce(fn, {
          invocationId: invocationIdFor(`${event.id}\u0000${connectionId}`, fn.id),
          caller,
          provider: event.provider,
          connectionId,
          providerConfigKey: event.providerConfigKey,
          input: event.payload,
          maxRetries: WEBHOOK_RETRIES,
          wallTimeMs: this.env.SWITCHBOARD_WEBHOOK_TIMEOUT_MS,
          notify: false,
          sync: {
            syncId: `${fn.id}:${connectionId}`,
            lastSyncDate: null,
            models: config.returns,
            trackDeletes: config.track_deletes,
            mode: 'webhook',
          },
        });
        if (fresh) started += 1;
      }
    }
    if (started > 0)
      this.logger.log(
        `started ${started} onWebhook run(s) of ${event.providerConfigKey} for webhook ${event.id}`,
      );
    return started;
  }
}
