import { createHash } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { subscribes, type SyncWebhookEvent } from '@switchboard/contracts';
import type { OrchestratorDb } from '@switchboard/db';
import { Client, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { ORCHESTRATOR_ENV, type OrchestratorEnv } from '../config/env';
import { ORCHESTRATOR_DB } from '../database/database.module';
import { DeployedFunctionsCache } from '../functions/deployed-functions-cache';
import { syncWorkflow } from '../workflows';

/** One workflow per (webhook, sync row): a redelivered event finds it started, and starts nothing. */
export function webhookWorkflowIdOf(eventId: string, syncId: string): string {
  return `sync-webhook-${createHash('sha256').update(`${eventId}\u0000${syncId}`).digest('hex').slice(0, 40)}`;
}

/**
 * The `onWebhook` handlers of syncs. For a provider webhook the relay routed to connections, every enabled
 * sync of the integration whose `webhookSubscriptions` match runs its handler on each of those connections
 * where it exists (each variant), as a run of the sync (`syncWorkflow`, run type WEBHOOK, mode `webhook`):
 * the same path as a scheduled run, so the script's sync API (`batchSave`, checkpoints, ...) works and
 * the run's counts become a `sync` webhook with `syncType: WEBHOOK`.
 */
@Injectable()
export class SyncWebhooksService {
  private readonly logger = new Logger('SyncWebhooks');

  constructor(
    @Inject(ORCHESTRATOR_DB) private readonly db: OrchestratorDb,
    private readonly temporal: Client,
    @Inject(ORCHESTRATOR_ENV) private readonly env: OrchestratorEnv,
    private readonly lookups: DeployedFunctionsCache,
  ) {}

  /** Starts the runs one routed webhook causes; resolves with how many were started now. */
  async dispatch(event: SyncWebhookEvent): Promise<number> {
    const subscribed = (await this.lookups.webhookSyncsOf(event.environmentId, event.providerConfigKey))
      .filter((s) => subscribes(s.subscriptions, event.subscriptionTypes))
      .map((s) => s.name);
    if (subscribed.length === 0) return 0;
    const syncs = await this.db.sync.findMany({
      where: {
        environmentId: event.environmentId,
        providerConfigKey: event.providerConfigKey,
        connectionId: { in: event.connectionIds },
        name: { in: subscribed },
      },
      orderBy: [{ name: 'asc' }, { connectionId: 'asc' }, { variant: 'asc' }],
    });
    let started = 0;
    for (const sync of syncs) {
      try {
        await this.temporal.workflow.start(syncWorkflow, {
          taskQueue: this.env.TEMPORAL_TASK_QUEUE,
          workflowId: webhookWorkflowIdOf(event.id, sync.id),
          // Not again for the same webhook, even once the first run is over (within the namespace's retention).
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
          args: [{ syncId: sync.id, webhook: { payload: event.payload } }],
        });
        started += 1;
      } catch (error) {
        if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
      }
    }
    if (started > 0)
      this.logger.log(`started ${started} onWebhook run(s) of ${event.providerConfigKey} for ${event.id}`);
    return started;
  }
}
