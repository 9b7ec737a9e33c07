import {
  EVENT_SUBJECTS,
  functionRunResultSchema,
  recordModelKey,
  type Caller,
  type FunctionRunRequest,
  type SyncEvent,
} from '@switchboard/contracts';
import { Prisma, type OrchestratorDb } from '@switchboard/db';
import { publishEvent, type NatsRequester } from '@switchboard/messaging';
import { WorkflowNotFoundError, type WorkflowClient } from '@temporalio/client';
import type { NatsConnection } from 'nats';
import type { OrchestratorEnv } from '../config/env';
import { callerOfEnvironment } from '../functions/environment-caller';
import { recordSyncRun } from '../metrics';
import type { StoredConfig } from '../functions/function-config';
import { IntegrationDirectory } from '../functions/integration-directory';
import { runLeased, stopAttempt } from '../functions/leased-run';
import type { ModelCounts, SyncRecords } from './sync-records';

export const SYNC_RUN_STATUS = { running: 'RUNNING', success: 'SUCCESS', stopped: 'STOPPED' } as const;
/** `WEBHOOK`: a run of the script's onWebhook handler with a provider webhook's payload. */
export type SyncRunType = 'INITIAL' | 'INCREMENTAL' | 'FULL' | 'WEBHOOK';

/** A run the workflow may go on with: what the script needs, fixed at its start (history keeps it). */
export interface BegunSyncRun {
  runId: string;
  caller: Caller;
  provider: string;
  timeoutMs: number;
  heartbeatTimeoutMs: number;
  /** A WEBHOOK run: the provider's payload the onWebhook handler gets (added by the workflow). */
  webhookPayload?: unknown;
}

/** The run that holds a sync (its RUNNING scheduled or triggered run) and the workflow running it. */
export interface SyncRunHolder {
  runId: string;
  workflowId: string;
}

/** `begin`'s answer while another run holds the sync. */
export interface SyncBusy {
  busy: SyncRunHolder;
}

export type SyncRunOutcome =
  | { status: 'succeeded' }
  | { status: 'failed'; error: { type: string; description: string; payload?: unknown } }
  | { status: 'cancelled' };

export interface SyncRunnerDeps {
  db: OrchestratorDb;
  nats: NatsRequester;
  nc: NatsConnection;
  records: SyncRecords;
  /** Whether a holder's workflow still runs (else its run was abandoned), and a full resync's cancel. */
  workflows: Pick<WorkflowClient, 'getHandle'>;
  env: Pick<
    OrchestratorEnv,
    'SWITCHBOARD_SYNC_TIMEOUT_MS' | 'SWITCHBOARD_SYNC_HEARTBEAT_TIMEOUT_MS' | 'SWITCHBOARD_WEBHOOK_TIMEOUT_MS'
  >;
}

const NOT_WEBHOOK = { not: 'WEBHOOK' } as const;

/** Whether a workflow's latest execution still runs (an unknown workflow does not). */
export async function workflowRunning(
  workflows: Pick<WorkflowClient, 'getHandle'>,
  workflowId: string,
): Promise<boolean> {
  try {
    return (await workflows.getHandle(workflowId).describe()).status.name === 'RUNNING';
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return false;
    throw error;
  }
}

/**
 * One sync run, step by step, for the worker's activities: `begin` records it (and honours a pending
 * reset), `execute` asks functions-runtime to run the script (pinned version, the run id as invocation
 * id on every attempt), `finish` applies track_deletes, records the counts and publishes the events the
 * relay turns into `sync` webhooks. Each step may be retried by Temporal and is idempotent.
 *
 * Runs of one sync never overlap, whoever started them (its schedule, or the API's `sync-<id>-trigger`
 * workflow, which the schedule knows nothing of): the RUNNING scheduled or triggered run holds the sync
 * until `finish` closes it, and `begin` answers `busy` to any other (the schedule's run is then skipped,
 * the triggered one waits). Webhook runs hold nothing and may run beside them, as in Nango.
 */
export class SyncRunner {
  constructor(private readonly deps: SyncRunnerDeps) {}

  async begin(input: {
    syncId: string;
    runId: string;
    workflowId: string;
    /** A run of the onWebhook handler: no reset is honoured, lastSyncDate is left as it is. */
    webhook?: boolean;
  }): Promise<BegunSyncRun | SyncBusy | null> {
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
      let wasReset = false;
      const checkpointKey = {
        environmentId: sync.environmentId,
        providerConfigKey: sync.providerConfigKey,
        connectionId: sync.connectionId,
        functionName: sync.name,
        variant: sync.variant,
      };
      const answer = await db.$transaction(async (tx): Promise<SyncBusy | 'gone' | 'begun'> => {
        let current: typeof sync | null = sync;
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
        wasReset = reset;
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
            versionId: fn.currentVersionId,
            workflowId: input.workflowId,
            checkpointBefore: (checkpoint?.checkpoint as Prisma.InputJsonValue | undefined) ?? Prisma.DbNull,
          },
        });
        return 'begun';
      });
      if (answer === 'gone') return null;
      if (answer !== 'begun') return answer;
      if (wasReset) {
        // A full resync also forgets deletion windows left open (Nango drops its track-deletes checkpoints).
        const version = await db.functionVersion.findUnique({ where: { id: fn.currentVersionId } });
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
      if (run.workflowId !== asking.workflowId && (await this.workflowRunning(run.workflowId))) {
        return { busy: { runId: run.id, workflowId: run.workflowId } };
      }
      abandoned.push(run.id);
    }
    return { abandoned };
  }

  /** Whether a full resync was asked for and no run took it yet (`begin` clears it as it takes it). */
  async resetPending(syncId: string): Promise<boolean> {
    const sync = await this.deps.db.sync.findUnique({
      where: { id: syncId },
      select: { resetPending: true },
    });
    return sync?.resetPending ?? false;
  }

  private workflowRunning(workflowId: string): Promise<boolean> {
    return workflowRunning(this.deps.workflows, workflowId);
  }

  /**
   * A full resync asks the run holding the sync to stop (its workflow closes it as cancelled), unless the
   * reset was taken since it was asked for: then the holder is the full resync (its `begin` took it).
   */
  async cancelHolder(holder: SyncRunHolder): Promise<void> {
    const run = await this.deps.db.syncRun.findUnique({
      where: { id: holder.runId },
      include: { sync: { select: { resetPending: true } } },
    });
    if (run?.status !== SYNC_RUN_STATUS.running || !run.sync.resetPending) return;
    try {
      await this.deps.workflows.getHandle(holder.workflowId).cancel();
    } catch (error) {
      // Already over: nothing to cancel.
      if (!(error instanceof WorkflowNotFoundError)) throw error;
    }
  }

  /**
   * Runs the script once on functions-runtime and answers its outcome. A script failure is an outcome;
   * not reaching the runtime throws, so Temporal tries again (from the script's last checkpoint).
   */
  async execute(
    begun: BegunSyncRun,
    attempt: number,
    heartbeat: () => void,
    cancelled: Promise<never>,
  ): Promise<SyncRunOutcome> {
    const { db } = this.deps;
    const run = await db.syncRun.findUniqueOrThrow({ where: { id: begun.runId }, include: { sync: true } });
    const version = run.versionId
      ? await db.functionVersion.findUnique({ where: { id: run.versionId } })
      : null;
    if (!version) {
      return { status: 'failed', error: { type: 'script_error', description: 'The sync was deleted' } };
    }
    const config = version.config as unknown as StoredConfig;
    const { sync } = run;
    await db.syncRun.update({ where: { id: run.id }, data: { attempts: attempt } });
    const request: FunctionRunRequest & { lease: { ttlMs: number } } = {
      caller: begun.caller,
      invocationId: run.id,
      function: {
        id: String(version.functionId ?? ''),
        name: sync.name,
        type: 'sync',
        version: version.version,
        codeSha256: version.sha256,
        // By its hash (the runtime keeps bundles); inline only when no function id lets the runtime ask.
        ...(version.functionId === null ? { code: version.codeJs } : {}),
        ...(config.attributes && Object.keys(config.attributes).length > 0
          ? { attributes: config.attributes }
          : {}),
      },
      connection: {
        connectionId: sync.connectionId,
        providerConfigKey: sync.providerConfigKey,
        provider: begun.provider,
      },
      variant: sync.variant,
      sync: {
        syncId: sync.id,
        lastSyncDate: sync.lastSyncDate?.toISOString() ?? null,
        models: config.returns,
        trackDeletes: config.track_deletes,
        mode: run.type === 'WEBHOOK' ? 'webhook' : run.type === 'FULL' ? 'full' : 'incremental',
      },
      ...(run.type === 'WEBHOOK' ? { input: begun.webhookPayload ?? null } : {}),
      attempt,
      depth: 0,
      limits: { wallTimeMs: begun.timeoutMs },
      // Silent as long as Temporal waits before retrying the run elsewhere: the script stops then too.
      lease: { ttlMs: begun.heartbeatTimeoutMs },
    };
    // Renewed with each heartbeat; a runtime replica that stops confirming it ends this attempt
    // (`function_runtime_lost`, thrown: Temporal tries again, from the script's last checkpoint).
    const reply = await runLeased<unknown>({
      nc: this.deps.nc,
      nats: this.deps.nats,
      request,
      // The runtime ends the script at the wall time; the margin is for loading and answering.
      timeoutMs: begun.timeoutMs + 30_000,
      heartbeat,
      cancelled: cancelled.catch((error: unknown) => {
        // Cancelled (a full resync, the workflow terminated or timed out): the script must not go on
        // on functions-runtime. Its writes are fenced anyway; this frees its slot and the provider.
        this.stopScript(run.id, attempt, error);
        throw error;
      }),
    });
    const result = functionRunResultSchema.parse(reply);
    if (result.status === 'success') return { status: 'succeeded' };
    return {
      status: 'failed',
      error: {
        type: 'script_error',
        description: result.error.message,
        ...(result.error.payload !== undefined ? { payload: result.error.payload } : {}),
      },
    };
  }

  /** Asks every functions-runtime replica to stop the script of this attempt of the run. */
  private stopScript(runId: string, attempt: number, cause: unknown): void {
    stopAttempt(
      this.deps.nc,
      { invocationId: runId, attempt },
      `the sync run was cancelled (${(cause as Error | undefined)?.message || 'cancelled'})`,
    );
  }

  /** Closes the run: counts, track_deletes, the sync's state, and the `events.v1.sync` events. */
  async finish(runId: string, outcome: SyncRunOutcome): Promise<void> {
    const { db, records } = this.deps;
    const run = await db.syncRun.findUnique({ where: { id: runId }, include: { sync: true } });
    if (!run || run.status !== SYNC_RUN_STATUS.running) return;
    const { sync } = run;
    const version = run.versionId
      ? await db.functionVersion.findUnique({ where: { id: run.versionId } })
      : null;
    const config = (version?.config ?? { returns: [], track_deletes: false }) as unknown as StoredConfig;
    const models = config.returns;
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
    const base = {
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
    const now = new Date();

    if (outcome.status === 'succeeded') {
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
      return;
    }

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
