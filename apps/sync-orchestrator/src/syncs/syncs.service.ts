import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  BASE_VARIANT,
  MAX_SYNC_VARIANTS,
  recordModelKey,
  type SyncCommandRequest,
  type SyncFrequencyRequest,
  type SyncStatusItem,
  type SyncStatusRequest,
  type SyncStatusResponse,
  type SyncTriggerRequest,
  type SyncVariantRequest,
  type SyncVariantResponse,
  CONNECTION_REQUESTS,
} from '@switchboard/contracts';
import type { OrchestratorDb } from '@switchboard/db';
import { NatsRequester } from '@switchboard/messaging';
import { Client, isGrpcServiceError, NamespaceNotFoundError, ServiceError } from '@temporalio/client';
import { ORCHESTRATOR_ENV, type OrchestratorEnv } from '../config/env';
import { ORCHESTRATOR_DB } from '../database/database.module';
import { storedConfig, type FunctionWithVersion, type StoredConfig } from '../functions/function-config';
import { OrchestratorError } from '../sync-orchestrator.errors';
import { parseSyncInterval } from './frequency';
import { SYNC_RUN_STATUS, workflowRunning } from './sync-runner';
import { SYNC_RECORDS, type RecordScope, type SyncRecords } from './sync-records';
import { SyncSchedules } from './sync-schedules';

type SyncRow = Awaited<ReturnType<OrchestratorDb['sync']['findMany']>>[number];

/** A sync function that is going away, with the models whose records go with it. */
export interface RemovedSync {
  providerConfigKey: string;
  name: string;
  models: string[];
}

const scopeOf = (row: SyncRow): RecordScope => ({
  environmentId: row.environmentId,
  providerConfigKey: row.providerConfigKey,
  connectionId: row.connectionId,
});

/**
 * Syncs per (connection, sync function, variant) and their Temporal schedules: created when a sync is
 * deployed or a connection authorised, removed with the function or the connection, and the control
 * commands of the sync API (trigger, pause, start, status, frequency, variants).
 */
@Injectable()
export class SyncsService {
  private readonly logger = new Logger('Syncs');
  private readonly schedules: SyncSchedules;

  constructor(
    @Inject(ORCHESTRATOR_DB) private readonly db: OrchestratorDb,
    @Inject(SYNC_RECORDS) private readonly records: SyncRecords,
    private readonly nats: NatsRequester,
    private readonly client: Client,
    @Inject(ORCHESTRATOR_ENV) env: OrchestratorEnv,
  ) {
    this.schedules = new SyncSchedules(client, env.TEMPORAL_TASK_QUEUE, env.TEMPORAL_CALL_DEADLINE_MS);
  }

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
    await this.temporal(async () => {
      for (const gone of removed) {
        const rows = await this.db.sync.findMany({
          where: { environmentId, providerConfigKey: gone.providerConfigKey, name: gone.name },
        });
        await this.removeRows(rows, gone.models);
      }
      for (const key of new Set(providerConfigKeys)) {
        const connections = await this.connectionIds(environmentId, key);
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
    await this.temporal(async () => {
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
    await this.temporal(() => this.removeRows(rows, []));
    if (deletedAt) {
      const newer = await this.db.sync.count({ where: { environmentId, providerConfigKey, connectionId } });
      if (newer > 0) return;
    }
    await this.records.deleteAllRecords({ environmentId, providerConfigKey, connectionId });
  }

  /** An integration was deleted: every sync of it stops on every connection, its records go too. */
  async integrationDeleted(environmentId: number, providerConfigKey: string): Promise<void> {
    const rows = await this.db.sync.findMany({ where: { environmentId, providerConfigKey } });
    await this.temporal(() => this.removeRows(rows, []));
    for (const connectionId of new Set(rows.map((row) => row.connectionId))) {
      await this.records.deleteAllRecords({ environmentId, providerConfigKey, connectionId });
    }
  }

  private async ensureSyncs(
    environmentId: number,
    providerConfigKey: string,
    connections: string[],
  ): Promise<void> {
    const functions = await this.syncFunctions(environmentId, providerConfigKey);
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
  private async schedule(row: SyncRow, config: StoredConfig): Promise<void> {
    const own = row.frequency ? parseSyncInterval(row.frequency) : undefined;
    const interval = own && typeof own !== 'string' ? own : parseSyncInterval(config.runs ?? '');
    if (typeof interval === 'string') return;
    await this.schedules.ensure(row.id, interval.ms, !config.auto_start);
  }

  private async removeRows(rows: SyncRow[], models: string[]): Promise<void> {
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

  // ---- commands ------------------------------------------------------------------------------------

  async trigger(request: SyncTriggerRequest): Promise<{ success: true }> {
    const rows = await this.targets(request);
    const functions = await this.functionsByName(request.caller.environmentId, request.providerConfigKey);
    await this.temporal(async () => {
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

  async pause(request: SyncCommandRequest): Promise<{ success: true }> {
    const rows = await this.targets(request);
    await this.temporal(async () => {
      for (const row of rows) await this.schedules.pause(row.id);
    });
    return { success: true };
  }

  async start(request: SyncCommandRequest): Promise<{ success: true }> {
    const rows = await this.targets(request);
    await this.temporal(async () => {
      for (const row of rows) await this.schedules.start(row.id);
    });
    return { success: true };
  }

  async status(request: SyncStatusRequest): Promise<SyncStatusResponse> {
    const { environmentId } = request.caller;
    if (request.connectionId !== undefined) {
      const found = await this.connectionIds(environmentId, request.providerConfigKey, request.connectionId);
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
    const functions = await this.functionsByName(environmentId, request.providerConfigKey);
    const syncs: SyncStatusItem[] = [];
    await this.temporal(async () => {
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

  /** `PUT /sync/update-connection-frequency`: answers the normalised interval, or the raw `runs` on revert. */
  async setFrequency(request: SyncFrequencyRequest): Promise<{ frequency: string }> {
    const { environmentId } = request.caller;
    const row = await this.oneSync(request);
    const fn = (await this.functionsByName(environmentId, request.providerConfigKey)).get(request.name);
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
    await this.temporal(() => this.schedules.setInterval(row.id, everyMs));
    return { frequency };
  }

  async createVariant(request: SyncVariantRequest): Promise<SyncVariantResponse> {
    const { environmentId } = request.caller;
    if (request.variant.toLowerCase() === BASE_VARIANT) {
      throw new OrchestratorError('invalid_variant', `Variant name "${request.variant}" is protected.`);
    }
    await this.requireConnection(environmentId, request.providerConfigKey, request.connectionId);
    const fn = (await this.functionsByName(environmentId, request.providerConfigKey)).get(request.name);
    if (!fn) throw new OrchestratorError('unknown_sync', `No sync "${request.name}"`);
    const key = {
      environmentId,
      providerConfigKey: request.providerConfigKey,
      connectionId: request.connectionId,
      name: request.name,
    };
    const row = await this.db.$transaction(async (tx) => {
      // One variant creation of a sync and connection at a time: two at once could both pass the cap.
      await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('orchestrator.sync-variant'), hashtext(${JSON.stringify([environmentId, key.providerConfigKey, key.connectionId, key.name])}))`;
      const siblings = await tx.sync.findMany({ where: key, select: { variant: true } });
      if (siblings.some((s) => s.variant === request.variant)) {
        throw new OrchestratorError(
          'sync_variant_already_exists',
          `Sync "${request.name}" already has a variant "${request.variant}" on this connection`,
        );
      }
      if (siblings.length >= MAX_SYNC_VARIANTS) {
        throw new OrchestratorError(
          'resource_capped',
          `Maximum number of variants per sync (${MAX_SYNC_VARIANTS}) reached`,
        );
      }
      return tx.sync.create({ data: { id: randomUUID(), ...key, variant: request.variant } });
    });
    try {
      await this.temporal(() => this.schedule(row, storedConfig(fn)));
    } catch (error) {
      await this.db.sync.delete({ where: { id: row.id } });
      throw error;
    }
    return { id: row.id, name: row.name, variant: row.variant };
  }

  async deleteVariant(request: SyncVariantRequest): Promise<{ success: true }> {
    if (request.variant.toLowerCase() === BASE_VARIANT) {
      throw new OrchestratorError('invalid_variant', `Variant name "${request.variant}" is protected.`);
    }
    // Nango answers a variant that is not there with 404 not_found (unknown_sync is for the other routes).
    const row = await this.oneSync(request).catch((error: unknown) => {
      if (error instanceof OrchestratorError && error.code === 'unknown_sync') {
        throw new OrchestratorError(
          'not_found',
          `No variant "${request.variant}" of sync "${request.name}" on this connection`,
        );
      }
      throw error;
    });
    const fn = (await this.functionsByName(request.caller.environmentId, request.providerConfigKey)).get(
      request.name,
    );
    await this.temporal(() => this.removeRows([row], fn ? storedConfig(fn).returns : []));
    return { success: true };
  }

  // ---- shared by the commands above ---------------------------------------------------------------

  /** The syncs a command names: all of the connection's (or integration's) when it names none. */
  private async targets(request: SyncCommandRequest): Promise<SyncRow[]> {
    const { environmentId } = request.caller;
    if (request.connectionId !== undefined) {
      await this.requireConnection(environmentId, request.providerConfigKey, request.connectionId);
    }
    const rows = await this.db.sync.findMany({
      where: {
        environmentId,
        providerConfigKey: request.providerConfigKey,
        ...(request.connectionId !== undefined ? { connectionId: request.connectionId } : {}),
        ...(request.syncs.length > 0
          ? { OR: request.syncs.map((s) => ({ name: s.name, variant: s.variant })) }
          : {}),
      },
    });
    const missing = request.syncs.filter(
      (s) => !rows.some((r) => r.name === s.name && r.variant === s.variant),
    );
    if (rows.length === 0 || missing.length > 0) {
      const names = (missing.length > 0 ? missing : request.syncs).map((s) =>
        s.variant === BASE_VARIANT ? s.name : `${s.name}::${s.variant}`,
      );
      throw new OrchestratorError(
        'no_syncs_found',
        names.length > 0 ? `No syncs found: ${names.join(', ')}` : 'No syncs found',
      );
    }
    return rows;
  }

  private async oneSync(request: {
    caller: { environmentId: number };
    providerConfigKey: string;
    connectionId: string;
    name: string;
    variant: string;
  }): Promise<SyncRow> {
    const { environmentId } = request.caller;
    await this.requireConnection(environmentId, request.providerConfigKey, request.connectionId);
    const row = await this.db.sync.findUnique({
      where: {
        environmentId_providerConfigKey_connectionId_name_variant: {
          environmentId,
          providerConfigKey: request.providerConfigKey,
          connectionId: request.connectionId,
          name: request.name,
          variant: request.variant,
        },
      },
    });
    if (!row)
      throw new OrchestratorError('unknown_sync', `No sync "${request.name}" (variant "${request.variant}")`);
    return row;
  }

  private async requireConnection(environmentId: number, providerConfigKey: string, connectionId: string) {
    const found = await this.connectionIds(environmentId, providerConfigKey, connectionId);
    if (found.length === 0) {
      throw new OrchestratorError(
        'unknown_connection',
        'Provided ConnectionId and ProviderConfigKey does not match a valid connection',
      );
    }
  }

  private connectionIds(environmentId: number, providerConfigKey: string, connectionId?: string) {
    return this.nats.call(CONNECTION_REQUESTS.idsForIntegration, {
      environmentId,
      providerConfigKey,
      ...(connectionId !== undefined ? { connectionId } : {}),
    });
  }

  private syncFunctions(environmentId: number, providerConfigKey: string): Promise<FunctionWithVersion[]> {
    return this.db.deployedFunction.findMany({
      where: { environmentId, providerConfigKey, type: 'sync', enabled: true },
      include: { currentVersion: true },
    });
  }

  private async functionsByName(environmentId: number, providerConfigKey: string) {
    const functions = await this.syncFunctions(environmentId, providerConfigKey);
    return new Map(functions.map((f) => [f.name, f]));
  }

  /**
   * Temporal unreachable, too slow (each schedule operation has a deadline) or without this service's
   * namespace (a Temporal still starting, or one being restored, answers NamespaceNotFound, which the SDK
   * throws as a plain Error) is `service_unavailable` for the caller, safe to retry, not a bare 500.
   */
  private async temporal<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (
        error instanceof ServiceError ||
        error instanceof NamespaceNotFoundError ||
        isGrpcServiceError(error)
      ) {
        throw new OrchestratorError('service_unavailable', 'Temporal is not reachable');
      }
      throw error;
    }
  }
}
