import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NatsUser } from '@switchboard/contracts';
import { testInfrastructure } from './infrastructure';
import { natsCredentials, withoutNatsSecrets, type NatsPasswords } from './nats';
import { freePort } from './ports';
import { repoRoot } from './repo';

export const ALL_SERVICES = [
  'auth-connect',
  'connections-vault',
  'proxy',
  'functions-runtime',
  'sync-orchestrator',
  'webhook-relay',
  'gateway',
] as const;
export type StackService = (typeof ALL_SERVICES)[number];

export interface StackOptions {
  /** Extra variables for every service (e.g. a low SWITCHBOARD_RATE_LIMIT_PER_MIN). */
  env?: Record<string, string>;
  /** Extra variables for one service. */
  serviceEnv?: Partial<Record<StackService, Record<string, string>>>;
  /** Default 60 s, or TEST_STACK_READY_TIMEOUT_MS (a shared, busy host can take minutes to boot seven services). */
  readyTimeoutMs?: number;
  /** How many processes to start of a service (default 1 each), e.g. `{ 'connections-vault': 2 }`. */
  replicas?: Partial<Record<StackService, number>>;
  /** Another NATS server than the test infrastructure's (e.g. startAuthenticatedNats()), with its passwords. */
  nats?: { url: string; passwords: NatsPasswords };
  /**
   * Reuse one stack for every test file of a jest worker that asks for the same options (see
   * `shared-stacks.ts`): the file gets a fresh account and key on it, `stop()` only releases it, and
   * the methods that change its processes (`stopService`, `startReplica`, `startWorker`) refuse. Outside
   * the e2e test environment this starts a stack of the file's own.
   */
  shared?: boolean;
  /**
   * Serve metrics for Prometheus (`OTEL_METRICS_EXPORTER=prometheus`) from the first process of each
   * service and the first worker, each on a loopback port of its own (`Stack.metricsPorts`). Other
   * replicas and workers export none. Ports are picked anew when a start is retried.
   */
  metrics?: boolean;
  /**
   * Start only these services (default: all), for a file whose tests touch a few (a boot costs about a
   * CPU-second per process). The worker starts with `sync-orchestrator`. Readiness is then each started
   * process's own (`GET /ready?scope=self`): the gateway's view lists every service. `Stack.services` has
   * entries for the started ones only; what the others own answers 503.
   */
  services?: readonly StackService[];
}

/** Where `startStack` finds the shared stacks of the jest worker (set by `@switchboard/testing/jest-environment`). */
export const SHARED_STACKS_KEY = Symbol.for('switchboard.testing.sharedStacks');

export interface SharedStacks {
  acquire(options: StackOptions): Promise<Stack>;
  stopAll(): Promise<void>;
}

function readyTimeoutDefault(): number {
  const configured = Number(process.env.TEST_STACK_READY_TIMEOUT_MS);
  return Number.isFinite(configured) && configured > 0 ? configured : 60_000;
}

export interface RunningService {
  name: StackService;
  port: number;
  process: ChildProcess;
  output: string[];
}

export interface Stack {
  gatewayUrl: string;
  secretKey: string;
  accountName: string;
  environmentUuid: string;
  databaseUrl: string;
  natsUrl: string;
  /**
   * NATS_USER / NATS_PASSWORD of a user on the stack's NATS server (nothing when it takes anonymous
   * clients): every process of the stack connects as its own service's user.
   */
  natsCredentials(user: NatsUser): Record<string, string>;
  /** The first process of each service (of each started one, with `StackOptions.services`). */
  services: Record<StackService, RunningService>;
  /** Every running process of each service: `services[name]` first, then extra replicas. */
  replicas: Record<StackService, RunningService[]>;
  /** What a service printed so far, all its processes together (for assertions on logs and for failure reports). */
  logs(service: StackService): string;
  /** Stops every process of a service. */
  stopService(service: StackService, signal?: NodeJS.Signals): Promise<number | null>;
  /** The environment the stack starts a service's processes with (to start another one like them). */
  envOf(service: StackService): Record<string, string>;
  /**
   * Starts one more process of a service with the stack's environment plus `env`, on a port of its own,
   * and waits for its liveness probe. It is stopped with the stack.
   */
  startReplica(service: StackService, env?: Record<string, string>): Promise<RunningService>;
  /** The orchestrator's Temporal worker processes (`dist/worker.js`), the first one started with the stack. */
  workers: RunningService[];
  /** Starts one more worker with the orchestrator's environment plus `env`; stopped with the stack. */
  startWorker(env?: Record<string, string>): RunningService;
  /** With `metrics`: where each service's first process, and the first worker, serve `/metrics`. */
  metricsPorts: Partial<Record<StackService | 'sync-orchestrator-worker', number>>;
  stop(): Promise<void>;
}

/**
 * Starts every service from its build (`dist/`) as its own process, against the test infrastructure,
 * with a fresh account and secret key, and waits until the gateway's readiness view lists all it depends
 * on as ready and every process answers its liveness probe. Each stack gets its own account so tests
 * never see each other's data or rate-limit windows.
 */
export async function startStack(options: StackOptions = {}): Promise<Stack> {
  const shared = (globalThis as Record<symbol, SharedStacks | undefined>)[SHARED_STACKS_KEY];
  const { shared: wantsShared, ...own } = options;
  if (wantsShared && shared) return shared.acquire(own);
  // Stacks of one worker share NATS, Temporal and the database: a shared stack still running would answer
  // this one's requests and sweep its rows. The shared ones stop first (the sequencer runs their files
  // first, so they are not needed again; one asked for later is started anew).
  await shared?.stopAll();
  return bootStack(own);
}

/** Starts a stack of the file's own (what `startStack` does once no shared stack is running). */
export async function bootStack(options: StackOptions = {}): Promise<Stack> {
  // A port found free can be taken by another process before the service binds it (outgoing
  // connections draw from the same range); such a start is retried with new ports.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startStackOnce(options);
    } catch (error) {
      if (attempt >= 3 || !/EADDRINUSE/.test((error as Error).message)) throw error;
    }
  }
}

async function startStackOnce(options: StackOptions): Promise<Stack> {
  const infra = await testInfrastructure();
  const root = repoRoot();
  if (infra.source === 'testcontainers') migrate(root, infra.databaseUrl);

  // The account is seeded while the services boot (they do not need it to start).
  const seeding = seedTestAccount(infra.databaseUrl);
  seeding.catch(() => undefined);

  const ports = Object.fromEntries(
    await Promise.all(ALL_SERVICES.map(async (s) => [s, await freePort()] as const)),
  ) as Record<StackService, number>;
  const gatewayUrl = `http://127.0.0.1:${ports.gateway}`;
  const nats = options.nats ?? { url: infra.natsUrl, passwords: infra.natsPasswords };
  const common = commonEnv(infra, ports, nats.url, gatewayUrl, options.env);
  // Master keys must be the same in every service of one stack.
  const masterKeys = process.env.TEST_MASTER_KEYS ?? common.SWITCHBOARD_MASTER_KEYS!;

  const envOf = (name: StackService) =>
    serviceEnv(name, { ...common, SWITCHBOARD_MASTER_KEYS: masterKeys }, ports, nats.passwords, options);
  const { metricsPorts, metricsEnv } = await metricsEndpoints(options.metrics === true);
  // Only the first process of each (labelled with its bare name) serves metrics.
  const launch = (name: StackService, env: Record<string, string>, label: string, entry?: string) =>
    launchService(root, name, { ...env, ...metricsEnv(label) }, label, entry);

  const started = options.services ?? ALL_SERVICES;
  const { services, replicas } = await launchServices(launch, envOf, options.replicas, started);

  // The orchestrator's Temporal worker runs async actions and on-event scripts: a process of its own, as
  // in production. It serves no HTTP, so readiness does not wait for it (it polls once Temporal answers).
  const workers: RunningService[] = [];
  const startWorker = (env: Record<string, string> = {}) => {
    const label = `sync-orchestrator-worker${workers.length === 0 ? '' : `#${workers.length + 1}`}`;
    const workerEnv = natsCredentials(nats.passwords, 'sync-orchestrator-worker');
    const started = launch(
      'sync-orchestrator',
      { ...envOf('sync-orchestrator'), ...workerEnv, ...env },
      label,
      'dist/worker.js',
    );
    workers.push(started);
    return started;
  };
  if (started.includes('sync-orchestrator')) startWorker();

  const stopService = async (service: StackService, signal: NodeJS.Signals = 'SIGTERM') => {
    const codes = await Promise.all(replicas[service].map((r) => stopProcess(r.process, signal)));
    return codes[0] ?? null;
  };
  const startReplica = async (service: StackService, env: Record<string, string> = {}) => {
    const replica = launch(
      service,
      { ...envOf(service), PORT: String(await freePort()), ...env },
      `${service}#${replicas[service].length + 1}`,
    );
    replicas[service].push(replica);
    await waitUntilLive(replica, options.readyTimeoutMs ?? readyTimeoutDefault());
    return replica;
  };
  const stack: Stack = {
    gatewayUrl,
    // Set once the seed has run, before the stack is returned.
    secretKey: '',
    accountName: '',
    environmentUuid: '',
    databaseUrl: infra.databaseUrl,
    natsUrl: nats.url,
    natsCredentials: (user) => natsCredentials(nats.passwords, user),
    services,
    replicas,
    logs: (service) =>
      [...replicas[service], ...(service === 'sync-orchestrator' ? workers : [])]
        .map((r) => r.output.join(''))
        .join(''),
    stopService,
    envOf,
    startReplica,
    workers,
    startWorker,
    metricsPorts,
    stop: () => stopStack(replicas, workers),
  };

  const everyService = started.length === ALL_SERVICES.length;
  const timeoutMs = options.readyTimeoutMs ?? readyTimeoutDefault();
  Object.assign(stack, await untilReady(stack, timeoutMs, seeding, everyService));
  return stack;
}

/**
 * Stops every process of a stack, and closes the seed's database clients (a later seed opens one again,
 * cheaply: its modules stay loaded).
 */
async function stopStack(replicas: Stack['replicas'], workers: RunningService[]): Promise<void> {
  await Promise.all([
    ...Object.values(replicas)
      .flat()
      .map((r) => stopProcess(r.process, 'SIGTERM')),
    ...workers.map((w) => stopProcess(w.process, 'SIGTERM')),
    closeSeedClients(),
  ]);
}

type MeteredProcess = StackService | 'sync-orchestrator-worker';

/**
 * With `metrics`, a loopback port for the Prometheus endpoint of each service's first process and of the
 * first worker, and the exporter's variables for a process by its label: those of its port, or none for
 * the others (replicas and later workers, labelled `name#2`, ...), which would bind the same port and
 * stop on finding it taken.
 */
async function metricsEndpoints(enabled: boolean): Promise<{
  metricsPorts: Stack['metricsPorts'];
  metricsEnv: (label: string) => Record<string, string>;
}> {
  const metricsPorts: Stack['metricsPorts'] = {};
  if (!enabled) return { metricsPorts, metricsEnv: () => ({}) };
  for (const name of [...ALL_SERVICES, 'sync-orchestrator-worker'] as const)
    metricsPorts[name] = await freePort();
  const metricsEnv = (label: string): Record<string, string> => {
    const port = metricsPorts[label as MeteredProcess];
    return port === undefined
      ? { OTEL_METRICS_EXPORTER: 'none' }
      : {
          OTEL_METRICS_EXPORTER: 'prometheus',
          OTEL_EXPORTER_PROMETHEUS_HOST: '127.0.0.1',
          OTEL_EXPORTER_PROMETHEUS_PORT: String(port),
        };
  };
  return { metricsPorts, metricsEnv };
}

/** One process per service, and the extra replicas the options ask for (each on a port of its own). */
async function launchServices(
  launch: (name: StackService, env: Record<string, string>, label: string) => RunningService,
  envOf: (name: StackService) => Record<string, string>,
  replicaCounts: StackOptions['replicas'],
  started: readonly StackService[],
): Promise<{
  services: Record<StackService, RunningService>;
  replicas: Record<StackService, RunningService[]>;
}> {
  const services = {} as Record<StackService, RunningService>;
  const replicas = Object.fromEntries(ALL_SERVICES.map((s) => [s, []])) as unknown as Record<
    StackService,
    RunningService[]
  >;
  for (const name of started) {
    services[name] = launch(name, envOf(name), name);
    replicas[name] = [services[name]];
    for (let i = 1; i < (replicaCounts?.[name] ?? 1); i++) {
      replicas[name].push(
        launch(name, { ...envOf(name), PORT: String(await freePort()) }, `${name}#${i + 1}`),
      );
    }
  }
  return { services, replicas };
}

/** One service's environment: the stack's, its port and NATS user, and the test's `serviceEnv` for it. */
function serviceEnv(
  name: StackService,
  common: Record<string, string>,
  ports: Record<StackService, number>,
  passwords: NatsPasswords,
  options: StackOptions,
): Record<string, string> {
  return {
    ...common,
    PORT: String(ports[name]),
    ...natsCredentials(passwords, name),
    // The fake providers of the tests listen on loopback, which auth-connect's egress policy refuses otherwise.
    ...(name === 'auth-connect' && common.SWITCHBOARD_EGRESS_ALLOW === undefined
      ? { SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1' }
      : {}),
    ...options.serviceEnv?.[name],
  };
}

/** What every service of a stack gets in its environment (a test's `env` on top). */
function commonEnv(
  infra: Awaited<ReturnType<typeof testInfrastructure>>,
  ports: Record<StackService, number>,
  natsUrl: string,
  gatewayUrl: string,
  env: Record<string, string> | undefined,
): Record<string, string> {
  return {
    NATS_URL: natsUrl,
    DATABASE_URL: infra.databaseUrl,
    REDIS_URL: infra.redisUrl,
    TEMPORAL_ADDRESS: infra.temporalAddress,
    SWITCHBOARD_MASTER_KEYS: `1:${randomBytes(32).toString('base64')}`,
    SWITCHBOARD_SERVER_URL: gatewayUrl,
    SWITCHBOARD_PROXY_URL: `http://127.0.0.1:${ports.proxy}`,
    LOG_FORMAT: 'json',
    OTEL_TRACES_EXPORTER: 'none',
    // The connect page listens on a port of its own; any free one, unless a test names it (serviceEnv).
    CONNECT_PORT: '0',
    // Each stack's orchestrator and worker share a task queue no other stack polls.
    TEMPORAL_TASK_QUEUE: `switchboard-e2e-${randomUUID()}`,
    ...env,
  };
}

/** Starts one process of a service from its built `dist/`, its output collected (and shown with SWITCHBOARD_TEST_LOGS). */
function launchService(
  root: string,
  name: StackService,
  env: Record<string, string>,
  label: string,
  entry = 'dist/main.js',
): RunningService {
  const output: string[] = [];
  // Node's flags of the service as in its image (infra/node-flags.json): e.g. isolated-vm needs Node's own
  // startup snapshot off in functions-runtime.
  const flags = nodeFlagsOf(entry === 'dist/worker.js' ? 'sync-orchestrator-worker' : name);
  const child = spawn(process.execPath, [...flags, join(root, 'apps', name, entry)], {
    // Only its own NATS user: never the others' passwords the test runner may hold. Node's compile cache
    // (on disk, keyed by each file's content) spares every later start the compilation of the same
    // modules: a stack is eight Node processes loading much the same dependencies.
    env: { NODE_COMPILE_CACHE: compileCacheDir(), ...withoutNatsSecrets(process.env), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const collect = (chunk: Buffer) => {
    output.push(chunk.toString('utf8'));
    if (process.env.SWITCHBOARD_TEST_LOGS) process.stderr.write(`[${label}] ${chunk.toString('utf8')}`);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  return { name, port: Number(env.PORT), process: child, output };
}

/** Stops a process (resolves at once if it has exited) with its exit code. */
function stopProcess(child: ChildProcess, signal: NodeJS.Signals): Promise<number | null> {
  return new Promise<number | null>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode);
    child.once('exit', (code) => resolve(code));
    child.kill(signal);
  });
}

/**
 * Waits until the stack answers and its account is seeded; a stack that does not come up is stopped and
 * the error carries the end of each service's log.
 */
async function untilReady<T>(
  stack: Stack,
  timeoutMs: number,
  seeding: Promise<T>,
  everyService: boolean,
): Promise<T> {
  try {
    if (everyService) await waitUntilReady(stack.gatewayUrl, stack.replicas, timeoutMs);
    else
      await Promise.all(
        Object.values(stack.services).map((s) => waitUntilLive(s, timeoutMs, '/ready?scope=self')),
      );
    // The gateway's readiness sees one process per service, and not the proxy service when the proxy is
    // embedded in the gateway; every process (extra replicas too) must be up as well.
    await Promise.all(
      Object.values(stack.replicas)
        .flat()
        .map((r) => waitUntilLive(r, timeoutMs)),
    );
    return await seeding;
  } catch (error) {
    await stack.stop();
    const logs = ALL_SERVICES.map((s) => `--- ${s} ---\n${stack.logs(s).slice(-3000)}`).join('\n');
    throw new Error(`${(error as Error).message}\n${logs}`);
  }
}

async function waitUntilLive(service: RunningService, timeoutMs: number, path = '/health') {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (service.process.exitCode !== null) {
      throw new Error(
        `${service.name} exited with code ${service.process.exitCode} during start-up:\n${service.output.join('').slice(-3000)}`,
      );
    }
    try {
      if ((await fetch(`http://127.0.0.1:${service.port}${path}`)).status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${service.name} replica not answering ${path} after ${timeoutMs} ms`);
}

async function waitUntilReady(
  gatewayUrl: string,
  replicas: Record<StackService, RunningService[]>,
  timeoutMs: number,
) {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    const dead = Object.values(replicas)
      .flat()
      .find((s) => s.process.exitCode !== null);
    if (dead) throw new Error(`${dead.name} exited with code ${dead.process.exitCode} during start-up`);
    try {
      const res = await fetch(`${gatewayUrl}/ready`);
      last = await res.text();
      if (res.status === 200) return;
    } catch (error) {
      last = (error as Error).message;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`stack not ready after ${timeoutMs} ms; last readiness answer: ${last}`);
}

/** What the in-process seed uses of auth-connect's build and of @switchboard/db (their own types are not a dependency). */
interface SeedModules {
  seedDevelopment(
    db: SeedClient,
    secretKey: string,
    accountName: string,
  ): Promise<{ environmentUuid: string }>;
  createPrismaClient(databaseUrl: string, options: { poolSize: number }): SeedClient;
}
interface SeedClient {
  $disconnect(): Promise<void>;
}

let seedModules: SeedModules | undefined;
/** A client per database URL, and the seeds running on each (closing waits for them). */
const seedClients = new Map<string, { client: SeedClient; running: Set<Promise<unknown>> }>();

/**
 * auth-connect's own seed (`seedDevelopment`, what `dist/seed-cli.js` runs) and `createPrismaClient`, loaded
 * with Node's require from the repo root rather than jest's module registry: the Prisma client is most of a
 * seed's cost, and Node's module cache loads it once per process instead of once per test file.
 */
function loadSeedModules(): SeedModules {
  if (seedModules) return seedModules;
  const authConnect = join(repoRoot(), 'apps/auth-connect');
  const load = createRequire(join(authConnect, 'package.json'));
  const { seedDevelopment } = load(join(authConnect, 'dist/seed/seed.js')) as Pick<
    SeedModules,
    'seedDevelopment'
  >;
  const { createPrismaClient } = load('@switchboard/db') as Pick<SeedModules, 'createPrismaClient'>;
  seedModules = { seedDevelopment, createPrismaClient };
  return seedModules;
}

/**
 * A fresh account in the database with one environment and a full-scope secret key (the stack's own seed).
 * It runs in this process, over a client kept per database URL until `closeSeedClients()` (a stack's `stop()`).
 */
export async function seedTestAccount(databaseUrl: string): Promise<{
  secretKey: string;
  accountName: string;
  environmentUuid: string;
}> {
  const secretKey = randomUUID();
  const accountName = `test-${randomUUID()}`;
  const { seedDevelopment, createPrismaClient } = loadSeedModules();
  let entry = seedClients.get(databaseUrl);
  if (!entry) {
    entry = { client: createPrismaClient(databaseUrl, { poolSize: 2 }), running: new Set() };
    seedClients.set(databaseUrl, entry);
  }
  const seeding = seedDevelopment(entry.client, secretKey, accountName);
  entry.running.add(seeding);
  try {
    const seeded = await seeding;
    return { secretKey, accountName, environmentUuid: seeded.environmentUuid };
  } catch (error) {
    throw new Error(`seed failed: ${(error as Error).message}`, { cause: error });
  } finally {
    entry.running.delete(seeding);
  }
}

/**
 * Closes the seed's database clients once their running seeds end, so no connection outlives the tests
 * and nothing keeps the process (or jest) from exiting. A later seed opens a new client.
 */
export async function closeSeedClients(): Promise<void> {
  const entries = [...seedClients.values()];
  seedClients.clear();
  await Promise.all(
    entries.map(async ({ client, running }) => {
      await Promise.allSettled(running);
      await client.$disconnect();
    }),
  );
}

/** Applies the migrations to a database (used when testcontainers provided a blank one). */
export function migrate(root: string, databaseUrl: string): void {
  const result = spawnSync('pnpm', ['--filter', '@switchboard/db', 'run', 'migrate:deploy'], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: databaseUrl },
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`migrations failed: ${result.stderr || result.stdout}`);
}

function compileCacheDir(): string {
  return join(tmpdir(), 'switchboard-test-compile-cache');
}

/** The command-line flags `node` is given for a service (`infra/node-flags.json`, shared with the images). */
function nodeFlagsOf(service: string): string[] {
  const flags = JSON.parse(readFileSync(join(repoRoot(), 'infra/node-flags.json'), 'utf8')) as Record<
    string,
    string[] | undefined
  >;
  return flags[service] ?? [];
}
