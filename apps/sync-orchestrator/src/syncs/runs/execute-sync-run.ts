import { functionRunResultSchema, type FunctionRunRequest } from '@switchboard/contracts';
import { inlineBundle, VERSION_TO_RUN, type StoredConfig } from '../../functions/function-config';
import { runLeased, stopAttempt } from '../../functions/leased-run';
import type { BegunSyncRun, SyncRunOutcome, SyncRunnerDeps } from './sync-run';

type RunWithSync = Awaited<ReturnType<typeof findRun>>;
const findVersion = (deps: SyncRunnerDeps, versionId: string) =>
  deps.db.functionVersion.findUnique({ where: { id: versionId }, select: VERSION_TO_RUN });
type Version = NonNullable<Awaited<ReturnType<typeof findVersion>>>;

const findRun = (deps: SyncRunnerDeps, runId: string) =>
  deps.db.syncRun.findUniqueOrThrow({ where: { id: runId }, include: { sync: true } });

/**
 * The middle step of a sync run: runs the script once on functions-runtime (pinned version, the run id
 * as invocation id on every attempt) and answers its outcome. A script failure is an outcome; not
 * reaching the runtime throws, so Temporal tries again (from the script's last checkpoint).
 */
export class ExecuteSyncRun {
  constructor(private readonly deps: SyncRunnerDeps) {}

  async execute(
    begun: BegunSyncRun,
    attempt: number,
    heartbeat: () => void,
    cancelled: Promise<never>,
  ): Promise<SyncRunOutcome> {
    const { db } = this.deps;
    const run = await findRun(this.deps, begun.runId);
    const version = run.versionId ? await findVersion(this.deps, run.versionId) : null;
    if (!version) {
      return { status: 'failed', error: { type: 'script_error', description: 'The sync was deleted' } };
    }
    await db.syncRun.update({ where: { id: run.id }, data: { attempts: attempt } });
    const inline = await inlineBundle(db, version.id, version.functionId);
    // Renewed with each heartbeat; a runtime replica that stops confirming it ends this attempt
    // (`function_runtime_lost`, thrown: Temporal tries again, from the script's last checkpoint).
    const reply = await runLeased({
      nc: this.deps.nc,
      nats: this.deps.nats,
      request: runRequest(begun, run, version, inline, attempt),
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
}

/** What functions-runtime is asked to run: the pinned version's script for the run's connection. */
function runRequest(
  begun: BegunSyncRun,
  run: RunWithSync,
  version: Version,
  inline: { code?: string },
  attempt: number,
): FunctionRunRequest & { lease: { ttlMs: number } } {
  const config = version.config as unknown as StoredConfig;
  const { sync } = run;
  return {
    caller: begun.caller,
    invocationId: run.id,
    function: {
      id: String(version.functionId ?? ''),
      name: sync.name,
      type: 'sync',
      version: version.version,
      codeSha256: version.sha256,
      // By its hash (the runtime keeps bundles); inline only when no function id lets the runtime ask.
      ...inline,
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
}
