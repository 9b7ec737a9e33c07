import { EVENT_SUBJECTS, recordModelKey, type SyncEvent } from '@switchboard/contracts';
import { Prisma } from '@switchboard/db';
import { publishEvent } from '@switchboard/messaging';
import type { StoredConfig } from '../../functions/function-config';
import { recordSyncRun } from '../../metrics';
import type { ModelCounts, RecordScope } from '../sync-records';
import { SYNC_RUN_STATUS, type SyncRunOutcome, type SyncRunnerDeps } from './sync-run';

type RunWithSync = NonNullable<Awaited<ReturnType<typeof findRun>>>;

const findRun = (deps: SyncRunnerDeps, runId: string) =>
  deps.db.syncRun.findUnique({ where: { id: runId }, include: { sync: true } });

/** What both endings of a run need: the run, its script's models, and the fields of its events. */
interface Finishing {
  run: RunWithSync;
  config: StoredConfig;
  scope: RecordScope;
  checkpoints: { from: unknown; to: unknown };
  base: ReturnType<typeof eventBase>;
  now: Date;
}

/**
 * The last step of a sync run: applies track_deletes, records the counts, closes the run and publishes
 * the `events.v1.sync` events the relay turns into `sync` webhooks. Idempotent: a run already closed is
 * left alone, and a retry publishes its events again under the same ids (JetStream drops the duplicates).
 */
export class FinishSyncRun {
  constructor(private readonly deps: SyncRunnerDeps) {}

  async execute(runId: string, outcome: SyncRunOutcome): Promise<void> {
    const { db } = this.deps;
    const run = await findRun(this.deps, runId);
    if (!run || run.status !== SYNC_RUN_STATUS.running) return;
    const { sync } = run;
    const version = run.versionId
      ? await db.functionVersion.findUnique({ where: { id: run.versionId }, select: { config: true } })
      : null;
    const config = (version?.config ?? { returns: [], track_deletes: false }) as unknown as StoredConfig;
    const scope = {
      environmentId: sync.environmentId,
      providerConfigKey: sync.providerConfigKey,
      connectionId: sync.connectionId,
    };
    const checkpoint = await db.functionCheckpoint.findUnique({
      where: {
        environmentId_providerConfigKey_connectionId_functionName_variant: {
          ...scope,
          functionName: sync.name,
          variant: sync.variant,
        },
      },
    });
    const checkpoints = {
      from: (run.checkpointBefore as unknown) ?? null,
      to: (checkpoint?.checkpoint as unknown) ?? null,
    };
    const base = eventBase(run, checkpoints);
    const now = new Date();
    const finishing: Finishing = { run, config, scope, checkpoints, base, now };
    if (outcome.status === 'succeeded') await this.succeeded(finishing);
    else await this.stopped(finishing, outcome);
  }

  private async succeeded({ run, config, scope, checkpoints, base, now }: Finishing): Promise<void> {
    const { db, records } = this.deps;
    const { sync } = run;
    const models = config.returns;
    // A webhook brings some changes, never the full list: nothing unseen is deleted after it. Nor after
    // a run that resumed from a checkpoint another run left (failed, abandoned): it has not seen the
    // records before it, which that run saved under its own id.
    if (config.track_deletes && run.type !== 'WEBHOOK' && run.checkpointBefore === null) {
      for (const model of models) {
        await records.deleteUnseen(scope, recordModelKey(model, sync.variant), run.id);
      }
    }
    const counts = await records.runCounts(run.id);
    const result: Record<string, ModelCounts> = {};
    for (const model of models) {
      result[model] = counts[recordModelKey(model, sync.variant)] ?? { added: 0, updated: 0, deleted: 0 };
    }
    // Published before the run is closed: a retry of this step publishes again under the same ids
    // (JetStream drops the duplicates), where closing first could lose them.
    for (const model of models) {
      const event: SyncEvent = {
        id: `sync-${run.id}-${model}`,
        ...base,
        model,
        result: {
          success: true,
          modifiedAfter: run.startedAt.toISOString(),
          responseResults: result[model]!,
        },
      };
      await publishEvent(this.deps.nc, EVENT_SUBJECTS.sync, event.id, event);
    }
    await db.$transaction([
      db.syncRun.update({
        where: { id: run.id },
        data: {
          status: SYNC_RUN_STATUS.success,
          finishedAt: now,
          result: result as unknown as Prisma.InputJsonValue,
          checkpointAfter: (checkpoints.to as Prisma.InputJsonValue | null) ?? Prisma.DbNull,
        },
      }),
      db.sync.update({
        where: { id: sync.id },
        data: {
          // lastSyncDate is the start of the last scheduled run that succeeded, what the next one reads from.
          ...(run.type === 'WEBHOOK' ? {} : { lastSyncDate: run.startedAt }),
          latestResult: result as unknown as Prisma.InputJsonValue,
        },
      }),
    ]);
    await records.forgetRun(run.id);
    const total = Object.values(result).reduce(
      (sum, c) => ({
        added: sum.added + c.added,
        updated: sum.updated + c.updated,
        deleted: sum.deleted + c.deleted,
      }),
      { added: 0, updated: 0, deleted: 0 },
    );
    recordSyncRun({
      syncType: run.type === 'INCREMENTAL' ? 'incremental' : 'full',
      outcome: 'success',
      durationMs: now.getTime() - run.startedAt.getTime(),
      records: total,
    });
  }

  /** A failed run publishes its failure; a cancelled one (a full resync, a terminated workflow) closes quietly. */
  private async stopped(
    { run, config, checkpoints, base, now }: Finishing,
    outcome: Exclude<SyncRunOutcome, { status: 'succeeded' }>,
  ): Promise<void> {
    const { db, records } = this.deps;
    const { sync } = run;
    const models = config.returns;
    const error =
      outcome.status === 'failed'
        ? outcome.error
        : { type: 'sync_cancelled', description: 'The run was cancelled' };
    if (outcome.status === 'failed') {
      const event: SyncEvent = {
        id: `sync-${run.id}-failure`,
        ...base,
        model: models.join(','),
        result: {
          success: false,
          error,
          // Nango builds it from the sync's previous lastSyncDate; the run's start when there is none.
          startedAt: (sync.lastSyncDate ?? run.startedAt).toISOString(),
          failedAt: now.toISOString(),
        },
      };
      await publishEvent(this.deps.nc, EVENT_SUBJECTS.sync, event.id, event);
    }
    await db.syncRun.update({
      where: { id: run.id },
      data: {
        status: SYNC_RUN_STATUS.stopped,
        finishedAt: now,
        error: error as Prisma.InputJsonValue,
        checkpointAfter: (checkpoints.to as Prisma.InputJsonValue | null) ?? Prisma.DbNull,
      },
    });
    // A failed run's next one starts a new generation: what this one saw no longer matters.
    await records.forgetRun(run.id);
    recordSyncRun({
      syncType: run.type === 'INCREMENTAL' ? 'incremental' : 'full',
      outcome: outcome.status === 'failed' ? 'failure' : 'cancelled',
      durationMs: now.getTime() - run.startedAt.getTime(),
      records: { added: 0, updated: 0, deleted: 0 },
    });
  }
}

/** The fields every `events.v1.sync` event of the run carries. */
function eventBase(run: RunWithSync, checkpoints: { from: unknown; to: unknown }) {
  const { sync } = run;
  return {
    environmentId: sync.environmentId,
    connectionId: sync.connectionId,
    providerConfigKey: sync.providerConfigKey,
    syncName: sync.name,
    syncVariant: sync.variant,
    // Nango reports a full run as INITIAL.
    syncType:
      run.type === 'WEBHOOK' || run.type === 'INCREMENTAL'
        ? (run.type as 'WEBHOOK' | 'INCREMENTAL')
        : ('INITIAL' as const),
    checkpoints,
  };
}
