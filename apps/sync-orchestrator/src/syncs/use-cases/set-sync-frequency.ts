import { Inject, Injectable } from '@nestjs/common';
import type { SyncFrequencyRequest } from '@switchboard/contracts';
import type { OrchestratorDb } from '@switchboard/db';
import { ORCHESTRATOR_DB } from '../../database/database.module';
import { storedConfig } from '../../functions/function-config';
import { OrchestratorError } from '../../sync-orchestrator.errors';
import { parseSyncInterval } from '../frequency';
import { SyncLookups } from '../sync-lookups';
import { SyncSchedules } from '../sync-schedules';
import { withTemporal } from '../temporal-call';

/** `PUT /sync/update-connection-frequency`: a connection's own interval for a sync, or back to the script's. */
@Injectable()
export class SetSyncFrequency {
  constructor(
    @Inject(ORCHESTRATOR_DB) private readonly db: OrchestratorDb,
    private readonly lookups: SyncLookups,
    private readonly schedules: SyncSchedules,
  ) {}

  /** `PUT /sync/update-connection-frequency`: answers the normalised interval, or the raw `runs` on revert. */
  async execute(request: SyncFrequencyRequest): Promise<{ frequency: string }> {
    const { environmentId } = request.caller;
    const row = await this.lookups.oneSync(request);
    const fn = (await this.lookups.functionsByName(environmentId, request.providerConfigKey)).get(
      request.name,
    );
    if (!fn) throw new OrchestratorError('unknown_sync', `No sync "${request.name}"`);
    const config = storedConfig(fn);
    let frequency: string;
    let everyMs: number;
    if (request.frequency !== null) {
      const interval = parseSyncInterval(request.frequency);
      if (typeof interval === 'string')
        throw new OrchestratorError('invalid_body', 'Sync interval is invalid');
      frequency = interval.interval;
      everyMs = interval.ms;
    } else {
      const runs = config.runs ? parseSyncInterval(config.runs) : 'invalid';
      if (typeof runs === 'string') throw new OrchestratorError('unknown_sync', `No sync "${request.name}"`);
      frequency = config.runs!;
      everyMs = runs.ms;
    }
    await this.db.sync.update({ where: { id: row.id }, data: { frequency: request.frequency } });
    await withTemporal(() => this.schedules.setInterval(row.id, everyMs));
    return { frequency };
  }
}
