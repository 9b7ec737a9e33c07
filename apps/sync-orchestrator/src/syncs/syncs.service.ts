import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { BASE_VARIANT, recordModelKey } from '@switchboard/contracts';
import type { OrchestratorDb } from '@switchboard/db';
import { ORCHESTRATOR_DB } from '../database/database.module';
import { storedConfig, type StoredConfig } from '../functions/function-config';
import { parseSyncInterval } from './frequency';
import { SyncLookups, scopeOf, type SyncRow } from './sync-lookups';
import { SYNC_RECORDS, type SyncRecords } from './sync-records';
import { SyncSchedules } from './sync-schedules';
import { withTemporal } from './temporal-call';

/** A sync function that is going away, with the models whose records go with it. */
export interface RemovedSync {
  providerConfigKey: string;
  name: string;
  models: string[];
}

/**
 * Syncs per (connection, sync function, variant) and their Temporal schedules: created when a sync is
 * deployed or a connection authorised, removed with the function or the connection. The commands of the
 * sync API (trigger, pause, start, status, frequency, variants) are the use cases in `use-cases/`.
 */
@Injectable()
export class SyncsService {
  private readonly logger = new Logger('Syncs');

  constructor(
    @Inject(ORCHESTRATOR_DB) private readonly db: OrchestratorDb,
    @Inject(SYNC_RECORDS) private readonly records: SyncRecords,
    private readonly lookups: SyncLookups,
    private readonly schedules: SyncSchedules,
  ) {}

  // ---- lifecycle: deploy, connections ------------------------------------------------------------

  /**
   * After a deploy (or a function's deletion): every sync function of these integrations gets a sync
   * and a schedule on every connection (the interval follows `runs` unless a connection overrides it),
   * and the syncs of removed functions lose their schedules, checkpoints and records.
   */
  async reconcile(
    environmentId: number,
    providerConfigKeys: string[],
    removed: RemovedSync[],
  ): Promise<void> {
    await withTemporal(async () => {
      for (const gone of removed) {
        const rows = await this.db.sync.findMany({
          where: { environmentId, providerConfigKey: gone.providerConfigKey, name: gone.name },
        });
        await this.removeRows(rows, gone.models);
      }
      for (const key of new Set(providerConfigKeys)) {
        const connections = await this.lookups.connectionIds(environmentId, key);
        await this.ensureSyncs(environmentId, key, connections);
      }
    });
  }

  /**
   * A connection was authorised: its integration's syncs are scheduled for it (idempotent). Syncs of the
   * same connection id made before `createdAt` belong to an earlier connection whose deletion this
   * orchestrator has not processed yet (it was down, and the two events can arrive in either order): they
   * go first, with their schedules, checkpoints and records, so the new connection starts from nothing
   * and the late deletion finds only newer syncs, which it keeps.
   */
  async connectionCreated(
    environmentId: number,
    providerConfigKey: string,
    connectionId: string,
    createdAt?: Date,
  ): Promise<void> {
    await withTemporal(async () => {
      if (createdAt) {
        const earlier = await this.db.sync.findMany({
          where: { environmentId, providerConfigKey, connectionId, createdAt: { lt: createdAt } },
        });
        if (earlier.length > 0) {
          this.logger.log(
            `removing ${earlier.length} sync(s) of an earlier connection ${connectionId} of ${providerConfigKey}`,
          );
          await this.removeRows(earlier, []);
          await this.records.deleteAllRecords({ environmentId, providerConfigKey, connectionId });
        }
      }
      await this.ensureSyncs(environmentId, providerConfigKey, [connectionId]);
    });
  }

  /**
   * A connection is being deleted (or was, at `deletedAt`): its schedules, checkpoints and records go.
   * Told late (the durable event of an orchestrator that was down), syncs made after `deletedAt` belong
   * to a new connection of the same id: they stay, and so do the records they share the scope with.
   */
  async connectionDeleted(
    environmentId: number,
    providerConfigKey: string,
    connectionId: string,
    deletedAt?: Date,
  ): Promise<void> {
    const rows = await this.db.sync.findMany({
      where: {
        environmentId,
        providerConfigKey,
        connectionId,
        ...(deletedAt ? { createdAt: { lte: deletedAt } } : {}),
      },
    });
    await withTemporal(() => this.removeRows(rows, []));
    if (deletedAt) {
      const newer = await this.db.sync.count({ where: { environmentId, providerConfigKey, connectionId } });
      if (newer > 0) return;
    }
    await this.records.deleteAllRecords({ environmentId, providerConfigKey, connectionId });
  }

  /** An integration was deleted: every sync of it stops on every connection, its records go too. */
  async integrationDeleted(environmentId: number, providerConfigKey: string): Promise<void> {
    const rows = await this.db.sync.findMany({ where: { environmentId, providerConfigKey } });
    await withTemporal(() => this.removeRows(rows, []));
    for (const connectionId of new Set(rows.map((row) => row.connectionId))) {
      await this.records.deleteAllRecords({ environmentId, providerConfigKey, connectionId });
    }
  }

  private async ensureSyncs(
    environmentId: number,
    providerConfigKey: string,
    connections: string[],
  ): Promise<void> {
    const functions = await this.lookups.syncFunctions(environmentId, providerConfigKey);
    for (const fn of functions) {
      const config = storedConfig(fn);
      const runs = parseSyncInterval(config.runs ?? '');
      if (typeof runs === 'string') {
        this.logger.warn(`sync ${fn.name} of ${providerConfigKey} has no valid frequency; not scheduled`);
        continue;
      }
      for (const connectionId of connections) {
        const key = { environmentId, providerConfigKey, connectionId, name: fn.name, variant: BASE_VARIANT };
        await this.db.sync.upsert({
          where: { environmentId_providerConfigKey_connectionId_name_variant: key },
          create: { id: randomUUID(), ...key },
          update: {},
        });
      }
      const rows = await this.db.sync.findMany({
        where: { environmentId, providerConfigKey, name: fn.name, connectionId: { in: connections } },
      });
      for (const row of rows) await this.schedule(row, config);
    }
  }

  /** Creates the row's schedule, or sets its interval (its own override, else the script's `runs`). */
  async schedule(row: SyncRow, config: StoredConfig): Promise<void> {
    const own = row.frequency ? parseSyncInterval(row.frequency) : undefined;
    const interval = own && typeof own !== 'string' ? own : parseSyncInterval(config.runs ?? '');
    if (typeof interval === 'string') return;
    await this.schedules.ensure(row.id, interval.ms, !config.auto_start);
  }

  /** Removes syncs with their schedules and checkpoints, and the records of `models` of each. */
  async removeRows(rows: SyncRow[], models: string[]): Promise<void> {
    for (const row of rows) {
      await this.schedules.delete(row.id);
      if (models.length > 0) {
        await this.records.deleteRecords(
          scopeOf(row),
          models.map((m) => recordModelKey(m, row.variant)),
        );
      }
      await this.db.$transaction([
        this.db.functionCheckpoint.deleteMany({
          where: { ...scopeOf(row), functionName: row.name, variant: row.variant },
        }),
        this.db.sync.delete({ where: { id: row.id } }),
      ]);
    }
  }
}
