import { Injectable } from '@nestjs/common';
import type { SyncCommandRequest } from '@switchboard/contracts';
import { SyncLookups } from '../sync-lookups';
import { SyncSchedules } from '../sync-schedules';
import { withTemporal } from '../temporal-call';

/**
 * `POST /sync/pause` and `POST /sync/start`: pauses or unpauses the syncs' schedules (a running run goes
 * on either way).
 */
@Injectable()
export class SetSyncsPaused {
  constructor(
    private readonly lookups: SyncLookups,
    private readonly schedules: SyncSchedules,
  ) {}

  async execute(request: SyncCommandRequest, paused: boolean): Promise<{ success: true }> {
    const rows = await this.lookups.targets(request);
    await withTemporal(async () => {
      for (const row of rows) {
        if (paused) await this.schedules.pause(row.id);
        else await this.schedules.start(row.id);
      }
    });
    return { success: true };
  }
}
