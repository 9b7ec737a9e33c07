import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import {
  freePort,
  natsServerBinary,
  portOpen,
  repoRoot,
  testInfrastructure,
  withoutNatsSecrets,
  type RunningService,
  type Stack,
} from '@switchboard/testing';

/**
 * Booting processes from dist/ is quick on an idle machine (a stack in a few seconds) but CI boxes
 * with two cores shared by parallel suites take far longer, so start-up hooks get a wider margin
 * than a test; the stack's own deadline comes first, so a failure reports the service logs.
 */
export const START_HOOK_TIMEOUT_MS = 150_000;
export const STACK_READY_TIMEOUT_MS = 120_000;

/** How long a process may take to start: TEST_STACK_READY_TIMEOUT_MS when set (as for a stack), else 120 s. */
function readyTimeout(): number {
  const configured = Number(process.env.TEST_STACK_READY_TIMEOUT_MS);
  return Number.isFinite(configured) && configured > 0 ? configured : STACK_READY_TIMEOUT_MS;
}

export interface ExtraProcess {
  url: string;
  port: number;
  process: ChildProcess;
  logs(): string;
  stop(): Promise<void>;
}

function track(child: ChildProcess, label: string) {
  const output: string[] = [];
  const collect = (chunk: Buffer) => {
    output.push(chunk.toString('utf8'));
    if (process.env.SWITCHBOARD_TEST_LOGS) process.stderr.write(`[${label}] ${chunk.toString('utf8')}`);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
  return { logs: () => output.join(''), stop };
}

export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 20_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
}

/**
 * Waits until a worker from `stack.startWorker()` polls its task queue (it says so in its log). The worker
 * serves no HTTP and starting it does not wait: a test that needs it soon (to take over from a worker it
 * kills) waits for this first, so a slow boot on a loaded host is not counted against the takeover.
 */
export async function waitUntilPolling(worker: RunningService): Promise<void> {
  const seen = await waitFor(
    'the new worker to poll its task queue',
    async () => {
      if (worker.output.join('').includes('worker polling task queue')) return 'polling';
      return worker.process.exitCode !== null || worker.process.signalCode !== null ? 'exited' : undefined;
    },
    readyTimeout(),
  );
  if (seen === 'exited')
    throw new Error(`the new worker exited before polling: ${worker.output.join('').slice(-2000)}`);
}

/**
 * Starts one more gateway process (a second replica, or one against other infrastructure) from the
 * build, on loopback, and waits until its liveness probe answers 200. Against a stack's NATS, pass the
 * gateway's user too (`...stack.natsCredentials('gateway')`).
 */
export async function startGateway(
  env: { NATS_URL: string } & Record<string, string>,
): Promise<ExtraProcess> {
  const infra = await testInfrastructure();
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [join(repoRoot(), 'apps/gateway/dist/main.js')], {
    env: {
      ...withoutNatsSecrets(process.env),
      REDIS_URL: infra.redisUrl,
      SWITCHBOARD_SERVER_URL: url,
      LOG_FORMAT: 'json',
      OTEL_TRACES_EXPORTER: 'none',
      ...env,
      HOST: '127.0.0.1',
      PORT: String(port),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const tracked = track(child, `gateway:${port}`);
  try {
    // A start-up, not an assertion: it gets a stack's time (20 s was too short on a host at a load of 30).
    await waitFor(
      'the extra gateway to answer /health',
      async () => {
        if (child.exitCode !== null)
          throw new Error(`gateway exited with ${child.exitCode}: ${tracked.logs().slice(-2000)}`);
        const res = await fetch(`${url}/health`);
        return res.status === 200 ? true : undefined;
      },
      readyTimeout(),
    );
  } catch (error) {
    await tracked.stop();
    throw error;
  }
  return { url, port, process: child, ...tracked };
}

/** A throwaway NATS server on loopback (port chosen now, or the given one to restart on it). */
export async function startNatsServer(port?: number): Promise<ExtraProcess> {
  const chosen = port ?? (await freePort());
  const child = spawn(natsServerBinary(), ['-a', '127.0.0.1', '-p', String(chosen)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const tracked = track(child, `nats:${chosen}`);
  await waitFor('the throwaway nats-server to listen', async () => {
    if (child.exitCode !== null)
      throw new Error(`nats-server exited with ${child.exitCode}: ${tracked.logs()}`);
    return (await portOpen(chosen)) ? true : undefined;
  });
  return { url: `nats://127.0.0.1:${chosen}`, port: chosen, process: child, ...tracked };
}

/**
 * A second account in the stack's database with a full-scope key of its own (the seed the stack
 * itself runs), for tests that need a fresh per-account rate-limit window.
 */
export function seedAccount(stack: Stack): { secretKey: string; environmentUuid: string } {
  const secretKey = randomUUID();
  const seed = spawnSync(process.execPath, [join(repoRoot(), 'apps/auth-connect/dist/seed-cli.js')], {
    env: {
      ...process.env,
      DATABASE_URL: stack.databaseUrl,
      SWITCHBOARD_SECRET_KEY: secretKey,
      SEED_ACCOUNT_NAME: `test-${randomUUID()}`,
    },
    encoding: 'utf8',
  });
  if (seed.status !== 0) throw new Error(`seed failed: ${seed.stderr}`);
  const seeded = JSON.parse(seed.stdout.trim().split('\n').pop() ?? '{}') as { environmentUuid: string };
  return { secretKey, environmentUuid: seeded.environmentUuid };
}
