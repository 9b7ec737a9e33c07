import './tracing';
import { existsSync } from 'node:fs';
import { stopTracing } from '@switchboard/observability';
import {
  DefaultLogger,
  NativeConnection,
  Runtime,
  Worker,
  type LogEntry,
  type LogLevel,
} from '@temporalio/worker';
import { Connection, WorkflowClient } from '@temporalio/client';
import { MasterKeyring } from '@switchboard/crypto';
import { createPgPool, createPrismaClient } from '@switchboard/db';
import { connectNats, NatsRequester } from '@switchboard/messaging';
import { createActionActivities } from './activities/action.activities';
import { createSyncActivities } from './activities/sync.activities';
import { FunctionInvocationRunner } from './functions/function-invocation-runner';
import { loadEnv, type OrchestratorEnv } from './config/env';
import { clientInterceptors, workerTracing } from './temporal/tracing';
import { RecordsStore } from '@switchboard/records-store';
import { workflowBundlePath } from './temporal/workflow-bundle';
import { SyncRunner } from './syncs/sync-runner';

/**
 * The Temporal worker: a process of its own (`node dist/worker.js`) beside the service (`dist/main.js`),
 * so workflow replay and activity load never compete with NATS request handling, and each scales on its
 * own. It polls TEMPORAL_TASK_QUEUE, runs `workflows/` in Temporal's sandbox (from the bundle the build
 * made, dist/workflow-bundle.js) and `activities/` natively.
 */
async function main(): Promise<void> {
  // With its log pipe gone (a killed parent), EPIPE on the next line would kill the worker mid-activity:
  // its logs are lost anyway, and a SIGTERM still stops it cleanly (as bootstrapService does for services).
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
  const env = loadEnv();
  const bundlePath = workflowBundlePath(__dirname);
  if (!existsSync(bundlePath)) {
    throw new Error(
      `${bundlePath} is missing: build the orchestrator (pnpm build) before starting its worker`,
    );
  }
  // Our own signal handling (below) instead of the Runtime's, so a signal during start-up stops cleanly too.
  Runtime.install({ logger: workerLogger(env), shutdownSignals: [] });
  const log = Runtime.instance().logger;

  const stopping = new AbortController();
  let worker: Worker | undefined;
  const shutdown = (signal: string) => {
    if (stopping.signal.aborted) return;
    log.info(`${signal} received, shutting down`);
    stopping.abort();
    // Past the grace time in-flight activities are cancelled; past this, something hangs.
    setTimeout(() => process.exit(1), 15_000).unref();
    if (worker?.getState() === 'RUNNING') worker.shutdown();
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));

  const connection = await connectWithRetry(env.TEMPORAL_ADDRESS, stopping.signal, log);
  if (!connection) return;
  // Activities of actions and on-event scripts ask functions-runtime over NATS and record in Postgres.
  // Its own NATS user (sync-orchestrator-worker in infra/nats/nats.conf), not the service's.
  const nc = await connectNats(env, 'sync-orchestrator-worker');
  const db = createPrismaClient(env.DATABASE_URL, { poolSize: 5 });
  const recordsPool = createPgPool(env.DATABASE_URL, { poolSize: env.SWITCHBOARD_RECORDS_DB_POOL_SIZE });
  const nats = new NatsRequester(nc);
  // Sync activities look at (and, for a full resync, cancel) the workflow holding a sync.
  const clientConnection = Connection.lazy({ address: env.TEMPORAL_ADDRESS });
  const syncRunner = new SyncRunner({
    db,
    nats,
    nc,
    records: new RecordsStore(recordsPool, new MasterKeyring(env.SWITCHBOARD_MASTER_KEYS)),
    workflows: new WorkflowClient({
      connection: clientConnection,
      namespace: env.TEMPORAL_NAMESPACE,
      interceptors: clientInterceptors().workflow,
    }),
    env,
  });
  try {
    worker = await Worker.create({
      connection,
      namespace: env.TEMPORAL_NAMESPACE,
      taskQueue: env.TEMPORAL_TASK_QUEUE,
      // Bundled by the build (src/bundle-workflows.ts), with the workflow interceptors of tracing.
      workflowBundle: { codePath: bundlePath },
      activities: {
        ...createActionActivities({
          runner: new FunctionInvocationRunner(db, nats, nc, env.SWITCHBOARD_ACTION_HEARTBEAT_TIMEOUT_MS),
          nc,
        }),
        ...createSyncActivities(syncRunner),
      },
      shutdownGraceTime: '10 seconds',
      ...workerTracing(),
    });
    // run() marks the worker RUNNING synchronously; a worker created but never run would keep the
    // process alive, so one that a signal caught while starting is run and stopped at once.
    const running = worker.run(); // resolves once shutdown() was called and in-flight tasks are done
    if (stopping.signal.aborted) worker.shutdown();
    else
      log.info(
        `worker polling task queue "${env.TEMPORAL_TASK_QUEUE}" in namespace "${env.TEMPORAL_NAMESPACE}"`,
      );
    await running;
  } finally {
    await connection.close().catch(() => undefined);
    await clientConnection.close().catch(() => undefined);
    await nc.drain().catch(() => undefined);
    await db.$disconnect().catch(() => undefined);
    await recordsPool.end().catch(() => undefined);
    await stopTracing();
  }
}

/** Temporal may still be starting next to us (`npm start`); wait for it a while instead of crash-looping. */
async function connectWithRetry(
  address: string,
  stopping: AbortSignal,
  log: Runtime['logger'],
  timeoutMs = 60_000,
): Promise<NativeConnection | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await NativeConnection.connect({ address });
    } catch (error) {
      const reason = (error as Error).message;
      if (Date.now() >= deadline) {
        throw new Error(`Temporal at ${address} not reachable after ${timeoutMs} ms: ${reason}`);
      }
      log.warn(`Temporal at ${address} not reachable yet, retrying: ${reason}`);
      await new Promise((resolve) => setTimeout(resolve, 1000));
      if (stopping.aborted) return undefined;
    }
  }
}

const LEVELS: Record<OrchestratorEnv['LOG_LEVEL'], LogLevel> = {
  error: 'ERROR',
  warn: 'WARN',
  log: 'INFO',
  debug: 'DEBUG',
  verbose: 'TRACE',
};

/** The SDK's logger at our LOG_LEVEL, writing one JSON object a line when LOG_FORMAT=json (as the service does). */
function workerLogger(env: OrchestratorEnv): DefaultLogger {
  if (env.LOG_FORMAT === 'pretty') return new DefaultLogger(LEVELS[env.LOG_LEVEL]);
  return new DefaultLogger(LEVELS[env.LOG_LEVEL], (entry: LogEntry) => {
    const record = {
      level: entry.level.toLowerCase(),
      pid: process.pid,
      timestamp: Number(entry.timestampNanos / 1_000_000n),
      message: entry.message,
      context: 'sync-orchestrator-worker',
      ...entry.meta,
    };
    // The SDK's metadata may hold errors and bigints, which JSON.stringify drops or throws on.
    const line = JSON.stringify(record, (_key, value: unknown) =>
      typeof value === 'bigint' ? value.toString() : value instanceof Error ? value.message : value,
    );
    process.stdout.write(`${line}\n`);
  });
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
