import { Module } from '@nestjs/common';
import { RecordsStore } from '@switchboard/records-store';
import { Client } from '@temporalio/client';
import { ORCHESTRATOR_ENV, type OrchestratorEnv } from '../config/env';
import { RecordsModule } from '../records/records.module';
import { SyncLookups } from './sync-lookups';
import { SYNC_RECORDS } from './sync-records';
import { SyncSchedules } from './sync-schedules';
import { SyncsHandlers } from './syncs.handlers';
import { SyncsService } from './syncs.service';
import { CreateSyncVariant } from './use-cases/create-sync-variant';
import { DeleteSyncVariant } from './use-cases/delete-sync-variant';
import { SetSyncFrequency } from './use-cases/set-sync-frequency';
import { SetSyncsPaused } from './use-cases/set-syncs-paused';
import { SyncStatus } from './use-cases/sync-status';
import { TriggerSyncs } from './use-cases/trigger-syncs';

/** Syncs, their schedules on Temporal and the sync API. The records store answers counts and deletes. */
@Module({
  imports: [RecordsModule],
  controllers: [SyncsHandlers],
  providers: [
    SyncsService,
    SyncLookups,
    {
      provide: SyncSchedules,
      inject: [Client, ORCHESTRATOR_ENV],
      useFactory: (client: Client, env: OrchestratorEnv) =>
        new SyncSchedules(client, env.TEMPORAL_TASK_QUEUE, env.TEMPORAL_CALL_DEADLINE_MS),
    },
    { provide: SYNC_RECORDS, useExisting: RecordsStore },
    TriggerSyncs,
    SetSyncsPaused,
    SyncStatus,
    SetSyncFrequency,
    CreateSyncVariant,
    DeleteSyncVariant,
  ],
  exports: [SyncsService],
})
export class SyncsModule {}
