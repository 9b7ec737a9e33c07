import { Injectable } from '@nestjs/common';
import type { SyncCommandRequest } from '@switchboard/contracts';
import { SyncLookups } from '../sync-lookups';
import { SyncSchedules } from '../sync-schedules';
import { withTemporal } from '../temporal-call';

/** `POST /sync/pause`: pauses the syncs' schedules (a running run goes on). */
@Injectable()
export class PauseSyncs {
  constructor(
    private readonly lookups: SyncLookups,
    private readonly schedules: SyncSchedules,
  ) {}

  async execute(request: SyncCommandRequest): Promise<{ success: true }> {
    const rows = await this.lookups.targets(request);
    await withTemporal(async () => {
      for (const row of rows) await this.schedules.pause(row.id);
    });
    return { success: true };
  }
}
