import { recordModelKey } from '@switchboard/contracts';
import { Prisma } from '@switchboard/db';
import { callerOfEnvironment } from '../../functions/environment-caller';
import type { StoredConfig } from '../../functions/function-config';
import { IntegrationDirectory } from '../../functions/integration-directory';
import {
  NOT_WEBHOOK,
  SYNC_RUN_STATUS,
  workflowRunning,
  type BegunSyncRun,
  type SyncBusy,
  type SyncRunnerDeps,
  type SyncRunType,
} from './sync-run';

export interface BeginSyncRunInput {
  syncId: string;
  runId: string;
  workflowId: string;
  /** A run of the onWebhook handler: no reset is honoured, lastSyncDate is left as it is. */
  webhook?: boolean;
}

type SyncRow = NonNullable<Awaited<ReturnType<SyncRunnerDeps['db']['sync']['findUnique']>>>;

/**
 * The first step of a sync run: records it (and honours a pending reset), unless another run holds the
 * sync (`busy`) or the sync, its function, environment or integration is gone (null). Idempotent: a retry
 * of a run already recorded only answers what the script needs.
 */
export class BeginSyncRun {
  constructor(private readonly deps: SyncRunnerDeps) {}

  async execute(input: BeginSyncRunInput): Promise<BegunSyncRun | SyncBusy | null> {
    const { db } = this.deps;
    const sync = await db.sync.findUnique({ where: { id: input.syncId } });
    if (!sync) return null; // deleted since the schedule fired
    const fn = await db.deployedFunction.findFirst({
      where: {
        environmentId: sync.environmentId,
        providerConfigKey: sync.providerConfigKey,
        type: 'sync',
        name: sync.name,
      },
    });
    if (!fn?.currentVersionId || !fn.enabled) return null;
    const caller = await callerOfEnvironment(this.deps.nats, sync.environmentId);
    if (!caller) return null;
    const provider = await new IntegrationDirectory(this.deps.nats).providerOf(
      caller,
      sync.providerConfigKey,
    );
    if (!provider) return null;

    const existing = await db.syncRun.findUnique({ where: { id: input.runId } });
    if (!existing) {
      // Runs recorded RUNNING whose workflows are over: this run closes them as it begins.
      let abandoned: string[] = [];
      if (!input.webhook) {
        const held = await this.holderOf(sync.id, input);
        if ('busy' in held) return held;
        abandoned = held.abandoned;
      }
      const answer = await this.record(sync, fn.currentVersionId, input, abandoned);
      if (answer === 'gone') return null;
      if (answer !== 'begun' && answer !== 'reset') return answer;
      if (answer === 'reset') await this.forgetDeleteWindows(sync, fn.currentVersionId);
      for (const runId of abandoned) await this.deps.records.forgetRun(runId);
    }
    return {
      runId: input.runId,
      caller,
      provider,
      timeoutMs: input.webhook
        ? this.deps.env.SWITCHBOARD_WEBHOOK_TIMEOUT_MS
        : this.deps.env.SWITCHBOARD_SYNC_TIMEOUT_MS,
      heartbeatTimeoutMs: this.deps.env.SWITCHBOARD_SYNC_HEARTBEAT_TIMEOUT_MS,
    };
  }

  /**
   * Records the run in one transaction with the closing of the abandoned runs and a pending reset; answers
   * `reset` when it took one, `busy` when another run got the sync first, `gone` when the sync went.
   */
  private record(
    sync: SyncRow,
    versionId: string,
    input: BeginSyncRunInput,
    abandoned: string[],
  ): Promise<SyncBusy | 'gone' | 'begun' | 'reset'> {
    const checkpointKey = {
      environmentId: sync.environmentId,
      providerConfigKey: sync.providerConfigKey,
      connectionId: sync.connectionId,
      functionName: sync.name,
      variant: sync.variant,
    };
    return this.deps.db.$transaction(async (tx): Promise<SyncBusy | 'gone' | 'begun' | 'reset'> => {
      let current: SyncRow | null = sync;
      if (!input.webhook) {
        // Concurrent begins of a scheduled and a triggered run of one sync queue on its row: the first
        // records its run, the second then sees it and does not run beside it.
        await tx.$queryRaw`SELECT id FROM orchestrator.syncs WHERE id = ${sync.id}::uuid FOR UPDATE`;
        const other = await tx.syncRun.findFirst({
          where: {
            syncId: sync.id,
            status: SYNC_RUN_STATUS.running,
            type: NOT_WEBHOOK,
            id: { notIn: abandoned },
          },
        });
        if (other) return { busy: { runId: other.id, workflowId: other.workflowId } };
        current = await tx.sync.findUnique({ where: { id: sync.id } });
        if (!current) return 'gone';
        // In the same transaction as the new run: the status never shows the sync between the two.
        await tx.syncRun.updateMany({
          where: { id: { in: abandoned }, status: SYNC_RUN_STATUS.running },
          data: {
            status: SYNC_RUN_STATUS.stopped,
            finishedAt: new Date(),
            error: { type: 'sync_abandoned', description: 'The run ended without finishing' },
          },
        });
      }
      const reset = current.resetPending && !input.webhook;
      if (reset) {
        // A full resync: the script starts over, from no checkpoint and no lastSyncDate.
        await tx.functionCheckpoint.deleteMany({ where: checkpointKey });
        await tx.sync.update({
          where: { id: sync.id },
          data: { resetPending: false, lastSyncDate: null },
        });
      }
      const checkpoint = await tx.functionCheckpoint.findUnique({
        where: { environmentId_providerConfigKey_connectionId_functionName_variant: checkpointKey },
      });
      const type: SyncRunType = input.webhook
        ? 'WEBHOOK'
        : reset
          ? 'FULL'
          : current.lastSyncDate
            ? 'INCREMENTAL'
            : 'INITIAL';
      await tx.syncRun.create({
        data: {
          id: input.runId,
          syncId: sync.id,
          status: SYNC_RUN_STATUS.running,
          type,
          versionId,
          workflowId: input.workflowId,
          checkpointBefore: (checkpoint?.checkpoint as Prisma.InputJsonValue | undefined) ?? Prisma.DbNull,
        },
      });
      return reset ? 'reset' : 'begun';
    });
  }

  /** A full resync also forgets deletion windows left open (Nango drops its track-deletes checkpoints). */
  private async forgetDeleteWindows(sync: SyncRow, versionId: string): Promise<void> {
    const version = await this.deps.db.functionVersion.findUnique({
      where: { id: versionId },
      select: { config: true },
    });
    const models = ((version?.config ?? { returns: [] }) as unknown as StoredConfig).returns;
    await this.deps.records.closeDeleteWindows(
      {
        environmentId: sync.environmentId,
        providerConfigKey: sync.providerConfigKey,
        connectionId: sync.connectionId,
      },
      models.map((m) => recordModelKey(m, sync.variant)),
    );
  }

  /**
   * The run holding the sync, if its workflow still runs; else the RUNNING runs whose workflows ended
   * without closing them (terminated, timed out, or cancelled before their first step answered), which
   * hold nothing: the run that begins closes them, so a sync is never held longer than the workflow
   * holding it lives. A run recorded under the asking workflow's own id is a previous execution's (one
   * execution of a workflow id runs at a time).
   */
  private async holderOf(
    syncId: string,
    asking: { runId: string; workflowId: string },
  ): Promise<SyncBusy | { abandoned: string[] }> {
    const running = await this.deps.db.syncRun.findMany({
      where: { syncId, status: SYNC_RUN_STATUS.running, type: NOT_WEBHOOK, id: { not: asking.runId } },
    });
    const abandoned: string[] = [];
    for (const run of running) {
      if (
        run.workflowId !== asking.workflowId &&
        (await workflowRunning(this.deps.workflows, run.workflowId))
      ) {
        return { busy: { runId: run.id, workflowId: run.workflowId } };
      }
      abandoned.push(run.id);
    }
    return { abandoned };
  }
}
