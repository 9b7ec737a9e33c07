import { Inject, Injectable } from '@nestjs/common';
import {
  recordModelKey,
  type SyncStatusItem,
  type SyncStatusRequest,
  type SyncStatusResponse,
} from '@switchboard/contracts';
import type { OrchestratorDb } from '@switchboard/db';
import { Client } from '@temporalio/client';
import { ORCHESTRATOR_DB } from '../../database/database.module';
import { storedConfig, type StoredConfig } from '../../functions/function-config';
import { OrchestratorError } from '../../sync-orchestrator.errors';
import { SYNC_RUN_STATUS, workflowRunning } from '../runs/sync-run';
import { SyncLookups, scopeOf, type SyncRow } from '../sync-lookups';
import { SYNC_RECORDS, type SyncRecords } from '../sync-records';
import { SyncSchedules } from '../sync-schedules';
import { withTemporal } from '../temporal-call';

/** `GET /sync/status`: each sync's state as Nango classifies it, its latest run, counts and checkpoint. */
@Injectable()
export class SyncStatus {
  constructor(
    @Inject(ORCHESTRATOR_DB) private readonly db: OrchestratorDb,
    @Inject(SYNC_RECORDS) private readonly records: SyncRecords,
    private readonly lookups: SyncLookups,
    private readonly schedules: SyncSchedules,
    private readonly client: Client,
  ) {}

  async execute(request: SyncStatusRequest): Promise<SyncStatusResponse> {
    const { environmentId } = request.caller;
    if (request.connectionId !== undefined) {
      const found = await this.lookups.connectionIds(
        environmentId,
        request.providerConfigKey,
        request.connectionId,
      );
      if (found.length === 0) throw new OrchestratorError('invalid_body', 'Connection not found');
    }
    const rows = await this.db.sync.findMany({
      where: {
        environmentId,
        providerConfigKey: request.providerConfigKey,
        ...(request.connectionId !== undefined ? { connectionId: request.connectionId } : {}),
        ...(request.all ? {} : { OR: request.syncs.map((s) => ({ name: s.name, variant: s.variant })) }),
      },
      orderBy: [{ connectionId: 'asc' }, { name: 'asc' }, { variant: 'asc' }],
    });
    const functions = await this.lookups.functionsByName(environmentId, request.providerConfigKey);
    const syncs: SyncStatusItem[] = [];
    await withTemporal(async () => {
      for (const row of rows) {
        const fn = functions.get(row.name);
        if (!fn) continue;
        syncs.push(await this.statusOf(row, storedConfig(fn)));
      }
    });
    return { syncs };
  }

  private async statusOf(listed: SyncRow, config: StoredConfig): Promise<SyncStatusItem> {
    const latest = await this.db.syncRun.findFirst({
      where: { syncId: listed.id },
      orderBy: { startedAt: 'desc' },
    });
    // The row read again after its latest run: a run read as finished has its result and lastSyncDate on
    // it (`finish` writes both in one transaction), where the listed row may predate that transaction.
    const [fresh, schedule, checkpoint, counts] = await Promise.all([
      this.db.sync.findUnique({ where: { id: listed.id } }),
      this.schedules.state(listed.id),
      this.db.functionCheckpoint.findUnique({
        where: {
          environmentId_providerConfigKey_connectionId_functionName_variant: {
            ...scopeOf(listed),
            functionName: listed.name,
            variant: listed.variant,
          },
        },
      }),
      this.records.recordCounts(
        scopeOf(listed),
        config.returns.map((m) => recordModelKey(m, listed.variant)),
      ),
    ]);
    const row = fresh ?? listed;
    const recordCount: Record<string, number> = {};
    for (const model of config.returns) recordCount[model] = counts[recordModelKey(model, row.variant)] ?? 0;
    // A scheduled or triggered run still recorded RUNNING whose workflow is over (terminated, timed out)
    // could not close itself; the next run closes it. Until then it is shown as the failure it is.
    const latestStatus =
      latest?.status === SYNC_RUN_STATUS.running &&
      latest.type !== 'WEBHOOK' &&
      !(await workflowRunning(this.client.workflow, latest.workflowId))
        ? SYNC_RUN_STATUS.stopped
        : latest?.status;
    // Nango's classifySyncStatus: a running job wins, then the schedule's state, then the last job's.
    let status: SyncStatusItem['status'];
    if (latestStatus === SYNC_RUN_STATUS.running) status = 'RUNNING';
    else if (!schedule) status = 'STOPPED';
    else if (schedule.paused) status = 'PAUSED';
    else if (latestStatus === SYNC_RUN_STATUS.stopped) status = 'ERROR';
    else status = 'SUCCESS';
    return {
      id: row.id,
      connection_id: row.connectionId,
      name: row.name,
      variant: row.variant,
      status,
      type: row.lastSyncDate ? 'INCREMENTAL' : 'INITIAL',
      finishedAt: latest?.finishedAt?.toISOString() ?? null,
      nextScheduledSyncAt: schedule?.nextActionAt?.toISOString() ?? null,
      frequency: row.frequency ?? config.runs,
      latestResult: (row.latestResult as SyncStatusItem['latestResult']) ?? null,
      latestExecutionStatus: (latestStatus as SyncStatusItem['latestExecutionStatus']) ?? null,
      recordCount,
      checkpoint: (checkpoint?.checkpoint as SyncStatusItem['checkpoint']) ?? null,
    };
  }
}
