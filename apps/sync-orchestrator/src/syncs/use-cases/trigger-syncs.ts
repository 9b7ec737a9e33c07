import { Inject, Injectable } from '@nestjs/common';
import { recordModelKey, type SyncTriggerRequest } from '@switchboard/contracts';
import type { OrchestratorDb } from '@switchboard/db';
import { ORCHESTRATOR_DB } from '../../database/database.module';
import { storedConfig } from '../../functions/function-config';
import { SyncLookups, scopeOf } from '../sync-lookups';
import { SYNC_RECORDS, type SyncRecords } from '../sync-records';
import { SyncSchedules } from '../sync-schedules';
import { withTemporal } from '../temporal-call';

/** `POST /sync/trigger`: runs the syncs now; `reset` makes it a full resync, `emptyCache` first deletes their records. */
@Injectable()
export class TriggerSyncs {
  constructor(
    @Inject(ORCHESTRATOR_DB) private readonly db: OrchestratorDb,
    @Inject(SYNC_RECORDS) private readonly records: SyncRecords,
    private readonly lookups: SyncLookups,
    private readonly schedules: SyncSchedules,
  ) {}

  async execute(request: SyncTriggerRequest): Promise<{ success: true }> {
    const rows = await this.lookups.targets(request);
    const functions = await this.lookups.functionsByName(
      request.caller.environmentId,
      request.providerConfigKey,
    );
    await withTemporal(async () => {
      for (const row of rows) {
        if (request.reset) {
          await this.db.sync.update({ where: { id: row.id }, data: { resetPending: true } });
        }
        const fn = functions.get(row.name);
        if (request.emptyCache && fn) {
          const models = storedConfig(fn).returns;
          await this.records.deleteRecords(
            scopeOf(row),
            models.map((m) => recordModelKey(m, row.variant)),
          );
        }
        await this.schedules.trigger(row.id, request.reset);
      }
    });
    return { success: true };
  }
}
