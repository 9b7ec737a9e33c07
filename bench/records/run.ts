/**
 * `pnpm --filter bench run records`: one run, on this machine, of
 *   1. the records store alone (sync-orchestrator's RecordsStore, in this process, against Postgres):
 *      1 KB records in batches of 1000, first all new, then the same ids again with half of them
 *      unchanged; beside it, in the same run and the same table, the ceilings: a plain batched upsert
 *      (unnest, every row rewritten: no hashing, no sealing, no change detection) and a COPY (psql \copy);
 *   2. the whole path: a sync script's `batchSave` (functions-runtime sandbox → orchestrator over NATS →
 *      store → Postgres), the same records and the same 50 % unchanged, timed from the run request to its
 *      answer, with the RSS of functions-runtime and sync-orchestrator sampled during a larger run;
 *   3. `GET /records` with `limit=1000` through the gateway (p50/p99), beside the store's own page read
 *      and the bare SQL of that page.
 *
 * Needs the built services (`pnpm build`) and the test infrastructure variables (TEST_DATABASE_URL,
 * TEST_NATS_URL, TEST_TEMPORAL_ADDRESS, TEST_REDIS_URL); see bench/README.md.
 */
import { execFileSync, execSync, fork, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes, randomInt, randomUUID } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import {
  RECORDS_SUBJECTS,
  type Caller,
  type FunctionRunRequest,
  type FunctionRunResult,
  type RecordsListReply,
  ENVIRONMENT_REQUESTS,
  FUNCTIONS_REQUESTS,
} from '@switchboard/contracts';
import { MasterKeyring } from '@switchboard/crypto';
import { createPgPool, createPrismaClient, Prisma } from '@switchboard/db';
import { NatsRequester } from '@switchboard/messaging';
import type { Stack } from '@switchboard/testing';
import { connect } from 'nats';
import { benchArgs } from '../tools/args';
import { Inspector } from '../tools/inspector';
import { writeBenchProvidersFile } from '../tools/upstream';
import type { GetClientAnswer, GetClientCommand } from './get-client';

const { args, num } = benchArgs();
const SETTINGS = {
  storeRecords: num('store-records', 20_000),
  pathRecords: num('path-records', 20_000),
  memoryRecords: num('memory-records', 100_000),
  getRequests: num('get-requests', 200),
  /**
   * `--get-warmup`: pages read before the measured ones, not counted. Freshly started services answered the
   * first ~50–100 pages ~1.5× slower (JIT, heap sizing), so 5 measured a service that had just started.
   */
  getWarmup: num('get-warmup', 100),
  /**
   * `--only=memory`: the memory run alone (no store, whole-path or GET phase); `--only=store`: the store
   * phase alone (no stack); `--only=get`: the store phase, one whole-path write of `--path-records` and the
   * GET phase (no 50 %-unchanged path write, no memory run).
   */
  only: args.get('only'),
  /** `--heap-snapshots=DIR`: functions-runtime's main heap written there mid-run and at the end. */
  heapSnapshots: args.get('heap-snapshots'),
  /** `--runtime-node-options=--max-semi-space-size=16`: NODE_OPTIONS for functions-runtime (what Node allows there). */
  runtimeNodeOptions: args.get('runtime-node-options') ?? '',
  /** `--runtime-v8-flags=--trace-gc`: V8 flags set in functions-runtime before the memory run (through its inspector). */
  runtimeV8Flags: args.get('runtime-v8-flags'),
  /**
   * `--alloc-profile=FILE`: a sampling heap profile of functions-runtime over the memory run, of what
   * outlived the young generation (`.heapprofile`, for DevTools' Memory tab or a script).
   */
  allocProfile: args.get('alloc-profile'),
  /** `--memory-series=FILE`: every RSS and heap sample of the memory run written there as JSON (for a plot). */
  memorySeries: args.get('memory-series'),
  /** `--store-dist=DIR`: the store phase loads `DIR/index.js` (another build of records-store, for an A/B in one run). */
  storeDist: args.get('store-dist'),
  /** `--gateway-v8-flags=--trace-gc`: V8 flags set in the gateway at start (its GC lines during the GET phase are counted). */
  gatewayV8Flags: args.get('gateway-v8-flags') ?? '',
  /** `--gateway-node-options=--max-semi-space-size=8`: NODE_OPTIONS for the gateway (what Node allows there). */
  gatewayNodeOptions: args.get('gateway-node-options') ?? '',
  /** `--orchestrator-v8-flags=--trace-gc`: V8 flags set in sync-orchestrator at start (its output is not counted). */
  orchestratorV8Flags: args.get('orchestrator-v8-flags') ?? '',
  /** `--orchestrator-node-options=...`: NODE_OPTIONS for sync-orchestrator (its NATS handlers, not the worker). */
  orchestratorNodeOptions: args.get('orchestrator-node-options') ?? '',
};
/** BENCH_PROFILE=gateway,sync-orchestrator: a V8 CPU profile of each named service over the GET phase, in /tmp/bench-prof/<name>/. */
const PROFILED = (process.env.BENCH_PROFILE ?? '').split(',').filter(Boolean);
if (SETTINGS.only !== undefined && !['memory', 'store', 'get'].includes(SETTINGS.only)) {
  throw new Error(`--only=${SETTINGS.only}: only --only=memory, --only=store and --only=get are known`);
}
/** The memory verdict: RSS may grow at most this much over the last half of the run (after warm-up). */
const FLAT_MAX_GROWTH = 0.1;
const TARGETS = { storePerSecond: 25_000, pathPerSecond: 10_000, getP50Ms: 20 };
const BATCH = 1000;

/** What the bench needs of sync-orchestrator's RecordsStore (loaded from its build: apps are not packages). */
interface Store {
  write(
    scope: Scope,
    model: string,
    records: Record<string, unknown>[],
    op: 'save' | 'update',
    runId: string,
  ): Promise<{ added: number; updated: number; unchanged: number }>;
  list(
    scope: Scope,
    model: string,
    query: { limit: number; cursor?: string },
  ): Promise<{ next_cursor: string | null }>;
  listJson(
    scope: Scope,
    model: string,
    query: { limit: number; cursor?: string },
  ): Promise<{ count: number; next_cursor: string | null }>;
}
interface Scope {
  environmentId: number;
  providerConfigKey: string;
  connectionId: string;
}

/** A record of about 1 KB of JSON; `version` is what makes a changed one differ. */
function record(i: number, version: number): Record<string, unknown> {
  return {
    id: `r-${i}`,
    name: `Record number ${i}`,
    email: `person-${i}@example.com`,
    version,
    tags: ['alpha', 'beta', 'gamma'],
    notes: 'x'.repeat(880),
  };
}
/** The measured round: the same ids, odd ones changed, even ones unchanged (50 %). */
const halfChanged = (i: number) => record(i, i % 2 === 0 ? 1 : 2);

const perSecond = (n: number, ms: number) => (n / ms) * 1000;
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;

async function timed(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

function rssMb(pid: number): number {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return NaN; // the process is gone: the table shows it
  }
  const line = status.split('\n').find((l) => l.startsWith('VmRSS:'));
  return Number(line?.split(/\s+/)[1] ?? 0) / 1024;
}

async function benchStore(databaseUrl: string) {
  const { repoRoot } = await import('@switchboard/testing');
  const { RecordsStore } = require(
    join(SETTINGS.storeDist ?? join(repoRoot(), 'packages/records-store/dist'), 'index.js'),
  ) as {
    RecordsStore: new (pool: unknown, keyring: MasterKeyring) => Store;
  };
  const db = createPrismaClient(databaseUrl, { poolSize: 4 });
  // The store's own node-postgres pool, as the service gives it (SWITCHBOARD_RECORDS_DB_POOL_SIZE).
  const pool = createPgPool(databaseUrl, { poolSize: 4 });
  const store = new RecordsStore(pool, new MasterKeyring(`1:${MasterKeyring.generateKeyMaterial()}`));
  const environmentId = randomInt(1_000_000, 2_000_000_000);
  const scope: Scope = { environmentId, providerConfigKey: 'bench', connectionId: `store-${randomUUID()}` };
  const n = SETTINGS.storeRecords;
  const rounds = async (
    make: (i: number) => Record<string, unknown>,
    runId: string,
    op: 'save' | 'update' = 'save',
  ) => {
    for (let i = 0; i < n; i += BATCH) {
      const batch = Array.from({ length: Math.min(BATCH, n - i) }, (_, k) => make(i + k));
      await store.write(scope, 'BenchRecord', batch, op, runId);
    }
  };
  try {
    console.log(`store: ${fmt(n)} new records...`);
    const insertMs = await timed(() => rounds((i) => record(i, 1), randomUUID()));
    console.log('store: the same ids again, 50 % unchanged...');
    const mixedMs = await timed(() => rounds(halfChanged, randomUUID()));
    // batchUpdate: a partial record per id, merged into the stored payload (read, opened, merged, sealed).
    console.log('store: batchUpdate of the same ids, one field each...');
    const updateMs = await timed(() => rounds((i) => ({ id: `r-${i}`, version: 3 }), randomUUID(), 'update'));

    // The ceilings, same table, same row width: rows built up front (random bytes as long as a sealed
    // payload: the column is bytea), then written with no hashing, sealing or change detection.
    const sealedLength = (
      await db.$queryRaw<{ len: number }[]>`
        SELECT avg(length(payload))::int AS len FROM orchestrator.records
        WHERE environment_id = ${environmentId} AND connection_id = ${scope.connectionId}`
    )[0]!.len;
    const rows = Array.from({ length: n }, (_, i) => ({
      id: randomUUID(),
      externalId: `c-${i}`,
      hash: createHash('md5').update(String(i)).digest('hex'),
      payload: randomBytes(sealedLength),
    }));
    const ceilingScope = `ceiling-${randomUUID()}`;
    const upsert = async () => {
      for (let i = 0; i < n; i += BATCH) {
        const chunk = rows.slice(i, i + BATCH);
        await db.$executeRaw`
          INSERT INTO orchestrator.records AS r (id, environment_id, provider_config_key, connection_id, model,
            external_id, data_hash, payload, size_bytes, created_at, updated_at)
          SELECT u.id, ${environmentId}, 'bench', ${ceilingScope}, 'Ceiling', u.external_id, u.data_hash,
            u.payload, 1000, now(), now()
          FROM unnest(${chunk.map((r) => r.id)}::uuid[], ${chunk.map((r) => r.externalId)}::text[],
            ${chunk.map((r) => r.hash)}::text[], ${chunk.map((r) => r.payload)}::bytea[])
            AS u(id, external_id, data_hash, payload)
          ON CONFLICT (id) DO UPDATE SET data_hash = EXCLUDED.data_hash, payload = EXCLUDED.payload,
            updated_at = now()`;
      }
    };
    console.log('ceiling: plain batched upsert (insert, then the same rows again)...');
    const upsertInsertMs = await timed(upsert);
    const upsertUpdateMs = await timed(upsert);
    // The same statement through node-postgres (as the store now writes), on other ids of the same width.
    const pgScope = `ceiling-pg-${randomUUID()}`;
    const pgIds = rows.map(() => randomUUID());
    const pgUpsert = async () => {
      for (let i = 0; i < n; i += BATCH) {
        const chunk = rows.slice(i, i + BATCH);
        await pool.query({
          name: 'bench_ceiling_upsert',
          text: `
            INSERT INTO orchestrator.records AS r (id, environment_id, provider_config_key, connection_id, model,
              external_id, data_hash, payload, size_bytes, created_at, updated_at)
            SELECT u.id, $1, 'bench', $2, 'Ceiling', u.external_id, u.data_hash, u.payload, 1000, now(), now()
            FROM unnest($3::uuid[], $4::text[], $5::text[], $6::bytea[]) AS u(id, external_id, data_hash, payload)
            ON CONFLICT (id) DO UPDATE SET data_hash = EXCLUDED.data_hash, payload = EXCLUDED.payload,
              updated_at = now()`,
          values: [
            environmentId,
            pgScope,
            pgIds.slice(i, i + BATCH),
            chunk.map((r) => r.externalId),
            chunk.map((r) => r.hash),
            chunk.map((r) => r.payload),
          ],
        });
      }
    };
    console.log('ceiling: the same upsert through node-postgres (insert, then the same rows again)...');
    const pgInsertMs = await timed(pgUpsert);
    const pgUpdateMs = await timed(pgUpsert);

    console.log('ceiling: COPY...');
    const csv = join(os.tmpdir(), `switchboard-bench-records-${process.pid}.csv`);
    const copyScope = `copy-${randomUUID()}`;
    const now = new Date().toISOString();
    writeFileSync(
      csv,
      rows
        .map((r) =>
          [
            randomUUID(),
            environmentId,
            'bench',
            copyScope,
            'Ceiling',
            r.externalId,
            r.hash,
            `\\x${r.payload.toString('hex')}`,
            1000,
            now,
            now,
          ].join(','),
        )
        .join('\n'),
    );
    const url = new URL(databaseUrl);
    const copyMs = await timed(async () => {
      execFileSync(
        'psql',
        [
          '-q',
          '-h',
          url.hostname,
          '-p',
          url.port || '5432',
          '-U',
          decodeURIComponent(url.username) || 'postgres',
          '-d',
          url.pathname.slice(1),
          '-c',
          `\\copy orchestrator.records (id, environment_id, provider_config_key, connection_id, model, external_id, data_hash, payload, size_bytes, created_at, updated_at) FROM '${csv}' WITH (FORMAT csv)`,
        ],
        { env: { ...process.env, PGPASSWORD: decodeURIComponent(url.password) } },
      );
    });
    rmSync(csv, { force: true });
    return {
      insertMs,
      mixedMs,
      updateMs,
      upsertInsertMs,
      upsertUpdateMs,
      pgInsertMs,
      pgUpdateMs,
      copyMs,
      store,
      scope,
      db,
      pool,
      environmentId,
    };
  } catch (error) {
    await db.$disconnect();
    await pool.end();
    throw error;
  }
}

/** The store's table, printed as soon as it is measured (a failed stack start later keeps it). */
function printStore(s: Awaited<ReturnType<typeof benchStore>>) {
  const n = SETTINGS.storeRecords;
  const storeInsert = perSecond(n, s.insertMs);
  const storeMixed = perSecond(n, s.mixedMs);
  const upsertIns = perSecond(n, s.upsertInsertMs);
  const upsertUpd = perSecond(n, s.upsertUpdateMs);
  const copy = perSecond(n, s.copyMs);
  const pgIns = perSecond(n, s.pgInsertMs);
  const pgUpd = perSecond(n, s.pgUpdateMs);
  console.log(
    `\nrecords of ${Buffer.byteLength(JSON.stringify(record(0, 1)))} bytes of JSON, batches of ${BATCH}, load ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}\n`,
  );
  console.log('| write | records | records/s | vs plain upsert (same rows, insert / update) | vs COPY |');
  console.log('|---|---|---|---|---|');
  console.log(
    `| plain batched upsert, new rows (ceiling) | ${fmt(n)} | ${fmt(upsertIns)} | 1.00 | ${(upsertIns / copy).toFixed(2)} |`,
  );
  console.log(
    `| plain batched upsert, every row rewritten (ceiling) | ${fmt(n)} | ${fmt(upsertUpd)} | 1.00 | ${(upsertUpd / copy).toFixed(2)} |`,
  );
  console.log(`| COPY (ceiling) | ${fmt(n)} | ${fmt(copy)} | | 1.00 |`);
  console.log(
    `| plain batched upsert through node-postgres, new rows (ceiling) | ${fmt(n)} | ${fmt(pgIns)} | ${(pgIns / upsertIns).toFixed(2)} | ${(pgIns / copy).toFixed(2)} |`,
  );
  console.log(
    `| plain batched upsert through node-postgres, every row rewritten (ceiling) | ${fmt(n)} | ${fmt(pgUpd)} | ${(pgUpd / upsertUpd).toFixed(2)} | ${(pgUpd / copy).toFixed(2)} |`,
  );
  console.log(
    `| store, all new | ${fmt(n)} | ${fmt(storeInsert)} | ${(storeInsert / upsertIns).toFixed(2)} | ${(storeInsert / copy).toFixed(2)} |`,
  );
  console.log(
    `| **store, 50 % unchanged** | ${fmt(n)} | ${fmt(storeMixed)} | ${(storeMixed / upsertUpd).toFixed(2)} | ${(storeMixed / copy).toFixed(2)} |`,
  );
  const storeUpdate = perSecond(n, s.updateMs);
  console.log(
    `| store, batchUpdate (one field merged into every row) | ${fmt(n)} | ${fmt(storeUpdate)} | ${(storeUpdate / upsertUpd).toFixed(2)} | ${(storeUpdate / copy).toFixed(2)} |`,
  );
  console.log(
    `\nstore vs the node-postgres ceiling: all new ${(storeInsert / pgIns).toFixed(2)}, 50 % unchanged ${(storeMixed / pgUpd).toFixed(2)}, batchUpdate ${(storeUpdate / pgUpd).toFixed(2)} (vs every row rewritten); vs the Prisma ceiling: ${(storeInsert / upsertIns).toFixed(2)}, ${(storeMixed / upsertUpd).toFixed(2)}`,
  );
  return { storeMixed, upsertIns, upsertUpd, copy };
}

/**
 * The store's page read in this process (limit 1000, the first page of the store phase's records):
 * wall time and this process's CPU per page, for `list` (objects) and `listJson` (text), beside the
 * page's bare SQL through node-postgres.
 */
async function benchPage(s: Awaited<ReturnType<typeof benchStore>>): Promise<void> {
  const pages = 50;
  const measure = async (work: () => Promise<unknown>) => {
    for (let i = 0; i < 5; i++) await work(); // warm-up: prepared plans, JIT
    const wall: number[] = [];
    const cpuStart = process.cpuUsage();
    for (let i = 0; i < pages; i++) wall.push(await timed(work));
    const cpu = process.cpuUsage(cpuStart);
    wall.sort((a, b) => a - b);
    return { p50: percentile(wall, 0.5), cpuMs: (cpu.user + cpu.system) / 1000 / pages };
  };
  const query = { limit: 1000 };
  const list = await measure(() => s.store.list(s.scope, 'BenchRecord', query));
  const json = await measure(() => s.store.listJson(s.scope, 'BenchRecord', query));
  const sql = await measure(() =>
    s.pool.query({
      text: `SELECT id, external_id, payload, created_at, updated_at FROM orchestrator.records
        WHERE environment_id = $1 AND provider_config_key = 'bench' AND connection_id = $2 AND model = 'BenchRecord'
        ORDER BY updated_at, id LIMIT 1001`,
      values: [s.environmentId, s.scope.connectionId],
    }),
  );
  console.log(
    `store page read, limit 1000, in-process (${pages} pages, load ${os.loadavg()[0]!.toFixed(1)}): store.list p50 ${list.p50.toFixed(1)} ms, CPU ${list.cpuMs.toFixed(1)} ms/page; store.listJson p50 ${json.p50.toFixed(1)} ms, CPU ${json.cpuMs.toFixed(1)} ms/page; bare SQL (node-postgres) p50 ${sql.p50.toFixed(1)} ms, CPU ${sql.cpuMs.toFixed(1)} ms/page`,
  );
}

/** A sync bundle shaped like the nango CLI's output: `total` records of ~1 KB, saved 1000 at a time. */
function syncBundle(total: number, round: 'new' | 'half-changed'): string {
  return `"use strict";
const record = (i, version) => ({ id: "r-" + i, name: "Record number " + i, email: "person-" + i + "@example.com",
  version, tags: ["alpha", "beta", "gamma"], notes: "x".repeat(880) });
module.exports = { default: { type: "sync", models: { BenchRecord: {} },
  exec: async (nango) => {
    for (let i = 0; i < ${total}; i += ${BATCH}) {
      const batch = [];
      for (let k = i; k < Math.min(i + ${BATCH}, ${total}); k++) {
        batch.push(record(k, ${round === 'new' ? '1' : 'k % 2 === 0 ? 1 : 2'}));
      }
      await nango.batchSave(batch, "BenchRecord");
    }
  } } };`;
}

type RunSync = (code: string) => Promise<FunctionRunResult>;

const MB = 1024 * 1024;
interface RssSample {
  at: number;
  runtime: number;
  orchestrator: number;
}
/** functions-runtime's own account of its memory, read through its inspector (bytes). */
interface RuntimeMemory {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
  isolates: number;
  isolatesHeap: number;
  isolatesUsed: number;
  /** V8's spaces of the main isolate (new, old, large-object, ...): used / committed bytes. */
  spaces: Record<string, { used: number; size: number }>;
  at?: number;
}
const RUNTIME_MEMORY = `(() => {
  const m = process.memoryUsage();
  const s = process.mainModule.require('./sandbox/sandbox.js').sandboxMemory();
  const spaces = {};
  for (const x of process.getBuiltinModule('v8').getHeapSpaceStatistics())
    spaces[x.space_name.replace(/_space$/, '')] = { used: x.space_used_size, size: x.space_size };
  return { rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external,
    arrayBuffers: m.arrayBuffers, isolates: s.isolates, isolatesHeap: s.totalHeapBytes, isolatesUsed: s.usedHeapBytes,
    spaces };
})()`;

/** The sample at a fraction of the run (by time: the script saves at a steady pace). */
const at = <T>(samples: T[], q: number): T | undefined =>
  samples[Math.min(samples.length - 1, Math.floor((samples.length - 1) * q))];
/** The highest value in a window of the run (RSS is a sawtooth: a window's top is steadier than a point). */
const topOf = (values: number[], from: number, to: number): number =>
  Math.max(...values.slice(Math.floor((values.length - 1) * from), Math.floor((values.length - 1) * to) + 1));

/**
 * The memory run: one sync saving `--memory-records` records, with the RSS of functions-runtime and
 * sync-orchestrator sampled every 250 ms and the runtime's own breakdown (V8 heap, external memory,
 * array buffers, its isolates' heaps) every second through its inspector; after the run, the same
 * breakdown once more, then after a forced full collection, which separates garbage V8 had not
 * collected yet from what is still referenced.
 */
async function memoryRun(stack: Stack, runSync: RunSync, inspector: Inspector) {
  const m = SETTINGS.memoryRecords;
  console.log(`memory: a sync saving ${fmt(m)} records, RSS sampled...`);
  const pids = {
    runtime: stack.services['functions-runtime'].process.pid!,
    orchestrator: stack.services['sync-orchestrator'].process.pid!,
  };
  const runtimeMemory = () => inspector.evaluate<RuntimeMemory>(RUNTIME_MEMORY);
  if (SETTINGS.runtimeV8Flags) {
    // Printed to the service's output (SWITCHBOARD_TEST_LOGS=1 shows it).
    await inspector.evaluate(
      `process.getBuiltinModule('v8').setFlagsFromString(${JSON.stringify(SETTINGS.runtimeV8Flags)})`,
    );
  }
  const before = await runtimeMemory();
  const samples: RssSample[] = [];
  const heaps: RuntimeMemory[] = [];
  const started = performance.now();
  const sampler = setInterval(() => {
    samples.push({
      at: performance.now() - started,
      runtime: rssMb(pids.runtime),
      orchestrator: rssMb(pids.orchestrator),
    });
  }, 250);
  let reading = false;
  const heapSampler = setInterval(() => {
    if (reading) return;
    reading = true;
    runtimeMemory()
      .then((h) => heaps.push({ ...h, at: performance.now() - started }))
      .catch(() => undefined)
      .finally(() => (reading = false));
  }, 1000);
  let snapshotTimer: NodeJS.Timeout | undefined;
  if (SETTINGS.heapSnapshots) {
    // A snapshot collects garbage first and stops the process while it is written: one, mid-run.
    const afterMs = num('heap-snapshot-after-s', 60) * 1000;
    snapshotTimer = setTimeout(() => {
      const path = join(SETTINGS.heapSnapshots!, `functions-runtime-mid-${Date.now()}.heapsnapshot`);
      inspector.heapSnapshot(path).then(
        () => console.log(`heap snapshot: ${path}`),
        (error: unknown) => console.log(`heap snapshot failed: ${String(error)}`),
      );
    }, afterMs);
  }
  let memoryMs: number;
  const { cpuMicros } = await import('../tools/proc');
  const cpuBefore = { runtime: cpuMicros(pids.runtime), orchestrator: cpuMicros(pids.orchestrator) };
  const cpu = { runtime: 0, orchestrator: 0 };
  if (SETTINGS.allocProfile) await inspector.startAllocationSampling(true);
  try {
    memoryMs = await timed(() => runSync(syncBundle(m, 'new')));
    cpu.runtime = cpuMicros(pids.runtime) - cpuBefore.runtime;
    cpu.orchestrator = cpuMicros(pids.orchestrator) - cpuBefore.orchestrator;
  } finally {
    clearInterval(sampler);
    clearInterval(heapSampler);
    clearTimeout(snapshotTimer);
  }
  if (SETTINGS.allocProfile) {
    // A young-generation collection first: garbage still sitting in new space would count as surviving.
    await inspector.evaluate(
      `(process.getBuiltinModule('v8').setFlagsFromString('--expose-gc'), process.getBuiltinModule('vm').runInNewContext('gc')({ type: 'minor' }), 0)`,
    );
    await inspector.stopAllocationSampling(SETTINGS.allocProfile);
    console.log(`allocation profile: ${SETTINGS.allocProfile}`);
  }
  const after = await runtimeMemory();
  await inspector.collectGarbage();
  const collected = await runtimeMemory();
  if (SETTINGS.heapSnapshots) {
    const path = join(SETTINGS.heapSnapshots, `functions-runtime-end-${Date.now()}.heapsnapshot`);
    await inspector.heapSnapshot(path);
    console.log(`heap snapshot: ${path}`);
  }
  if (SETTINGS.memorySeries) {
    writeFileSync(
      SETTINGS.memorySeries,
      JSON.stringify({ m, memoryMs, cpu, samples, heaps, before, after, collected }),
    );
    console.log(`memory series: ${SETTINGS.memorySeries}`);
  }
  return { m, memoryMs, cpu, samples, heaps, before, after, collected };
}

function printMemory(r: Awaited<ReturnType<typeof memoryRun>>): void {
  const { m, memoryMs, samples, heaps } = r;
  // microseconds per record = milliseconds per 1000 records
  const perRecord = (us: number) => (us / m).toFixed(1);
  console.log(
    `\nRSS during the ${fmt(m)}-record run (${(memoryMs / 1000).toFixed(1)} s; CPU per 1000 records: functions-runtime ${perRecord(r.cpu.runtime)} ms, sync-orchestrator ${perRecord(r.cpu.orchestrator)} ms; load ${os.loadavg()[0]!.toFixed(1)}), MB:\n`,
  );
  console.log('| progress | functions-runtime | sync-orchestrator |');
  console.log('|---|---|---|');
  for (const q of [0, 0.25, 0.5, 0.75, 1]) {
    const sample = at(samples, q);
    if (sample)
      console.log(
        `| ${Math.round(q * 100)} % | ${sample.runtime.toFixed(0)} | ${sample.orchestrator.toFixed(0)} |`,
      );
  }
  const max = (key: 'runtime' | 'orchestrator') => Math.max(...samples.map((x) => x[key]));
  console.log(`| max | ${max('runtime').toFixed(0)} | ${max('orchestrator').toFixed(0)} |`);

  const mb = (n: number) => (n / MB).toFixed(0);
  const row = (label: string, h: RuntimeMemory) =>
    console.log(
      `| ${label} | ${mb(h.rss)} | ${mb(h.heapUsed)} / ${mb(h.heapTotal)} | ${mb(h.external)} | ${mb(h.arrayBuffers)} | ${h.isolates}: ${mb(h.isolatesUsed)} / ${mb(h.isolatesHeap)} |`,
    );
  console.log('\nfunctions-runtime by its own account (process.memoryUsage() and its isolates), MB:\n');
  console.log(
    '| when | RSS | V8 heap used / total | external | of which array buffers | isolates: heap used / total |',
  );
  console.log('|---|---|---|---|---|---|');
  row('before the run', r.before);
  for (const q of [0.25, 0.5, 0.75, 1]) {
    const h = at(heaps, q);
    if (h) row(`${Math.round(q * 100)} %`, h);
  }
  row('after the run', r.after);
  row('after a forced full GC', r.collected);

  // Which of V8's spaces holds what (used / committed): garbage waiting for a scavenge sits in new space,
  // garbage waiting for a mark-compact in old and large-object space.
  const SPACES = ['new', 'old', 'large_object', 'new_large_object', 'code'];
  const space = (h: RuntimeMemory, name: string) => {
    const x = h.spaces?.[name];
    return x ? `${mb(x.used)} / ${mb(x.size)}` : '';
  };
  console.log('\nfunctions-runtime: V8 spaces of its main isolate, used / committed MB:\n');
  console.log(`| when | ${SPACES.join(' | ')} |`);
  console.log(`|---|${SPACES.map(() => '---').join('|')}|`);
  const spaceRow = (label: string, h: RuntimeMemory) =>
    console.log(`| ${label} | ${SPACES.map((n) => space(h, n)).join(' | ')} |`);
  spaceRow('before the run', r.before);
  for (const q of [0.25, 0.5, 0.75, 1]) {
    const h = at(heaps, q);
    if (h) spaceRow(`${Math.round(q * 100)} %`, h);
  }
  spaceRow('after a forced full GC', r.collected);

  // The verdict: the top of the RSS sawtooth just before half-way against its top at the end.
  const verdict = (name: string, key: 'runtime' | 'orchestrator') => {
    const values = samples.map((x) => x[key]).filter((v) => Number.isFinite(v));
    if (values.length < 20) return `${name}: too few samples`;
    const mid = topOf(values, 0.4, 0.5);
    const end = topOf(values, 0.9, 1);
    const growth = end - mid;
    const flat = growth <= mid * FLAT_MAX_GROWTH;
    return `${name} ${mid.toFixed(0)} → ${end.toFixed(0)} MB: ${growth >= 0 ? '+' : ''}${growth.toFixed(0)} MB (${growth >= 0 ? '+' : ''}${((growth / mid) * 100).toFixed(1)} %) ${flat ? 'flat' : 'GROWING'}`;
  };
  console.log(
    `\nverdict (RSS growth over the last half: top of 40–50 % → top of 90–100 %, flat if ≤ ${FLAT_MAX_GROWTH * 100} %): ${verdict('functions-runtime', 'runtime')}; ${verdict('sync-orchestrator', 'orchestrator')}`,
  );
}

/**
 * A profiled service's, the gateway's and the orchestrator's environment in the bench's stack: the CPU
 * profiler (`BENCH_PROFILE`), V8 flags set at start (`--gateway-v8-flags`, `--orchestrator-v8-flags`) and NODE_OPTIONS given on the
 * command line, all in one NODE_OPTIONS.
 */
function benchServiceEnv(name: 'gateway' | 'sync-orchestrator'): Record<string, string> | undefined {
  const nodeOptions: string[] = [];
  const env: Record<string, string> = {};
  if (PROFILED.includes(name)) {
    nodeOptions.push(`--require ${join(__dirname, '../../tools/cpu-profile.cjs')}`);
    env.BENCH_PROFILE_DIR = `/tmp/bench-prof/${name}`;
    // Started and stopped by SIGUSR2 around the GET phase.
    env.BENCH_PROFILE_DELAY_MS = 'signal';
  }
  const v8Flags = name === 'gateway' ? SETTINGS.gatewayV8Flags : SETTINGS.orchestratorV8Flags;
  if (v8Flags) {
    nodeOptions.push(`--require ${join(__dirname, '../../tools/v8-flags.cjs')}`);
    env.BENCH_V8_FLAGS = v8Flags;
  }
  const extra = name === 'gateway' ? SETTINGS.gatewayNodeOptions : SETTINGS.orchestratorNodeOptions;
  if (extra) nodeOptions.push(extra);
  if (nodeOptions.length === 0) return undefined;
  return { ...env, NODE_OPTIONS: nodeOptions.join(' ') };
}

async function main(): Promise<void> {
  const { startStack, testInfrastructure } = await import('@switchboard/testing');
  const infra = await testInfrastructure();
  const memoryOnly = SETTINGS.only === 'memory';
  const store = memoryOnly ? undefined : await benchStore(infra.databaseUrl);
  const storeFigures = store ? printStore(store) : undefined;
  if (store) await benchPage(store);
  if (SETTINGS.only === 'store') {
    await cleanStore(store!);
    return;
  }
  const cleanupDb = store?.db ?? createPrismaClient(infra.databaseUrl, { poolSize: 1 });

  console.log('starting the Switchboard stack...');
  // functions-runtime opens an inspector on loopback (any free port) for the memory run's breakdown.
  const inspectFlag = '--inspect=127.0.0.1:0';
  // On a host this busy a service can miss its NATS dial at start-up; a second try usually starts.
  let stack: Stack | undefined;
  for (let attempt = 1; !stack; attempt++) {
    try {
      stack = await startStack({
        env: {
          SWITCHBOARD_PROVIDERS_FILE: writeBenchProvidersFile('records'),
          SWITCHBOARD_RATE_LIMIT_PER_MIN: '1000000',
          LOG_LEVEL: 'warn',
          // `--otel=off` runs every service without OpenTelemetry, to show what tracing costs a page.
          ...(args.get('otel') === 'off' ? { OTEL_SDK_DISABLED: 'true' } : {}),
        },
        serviceEnv: {
          ...Object.fromEntries(
            (['gateway', 'sync-orchestrator'] as const).flatMap((name) => {
              const env = benchServiceEnv(name);
              return env ? [[name, env]] : [];
            }),
          ),
          'functions-runtime': {
            NODE_OPTIONS:
              `${process.env.NODE_OPTIONS ?? ''} ${inspectFlag} ${SETTINGS.runtimeNodeOptions}`.trim(),
          },
        },
        readyTimeoutMs: 240_000,
      });
    } catch (error) {
      if (attempt >= 3) throw error;
      console.log(`stack start failed (${(error as Error).message.split('\n')[0]}), again...`);
    }
  }
  const nc = await connect({ servers: stack.natsUrl });
  const inspectorUrl = Inspector.urlIn(stack.logs('functions-runtime'));
  if (!inspectorUrl) throw new Error('functions-runtime printed no inspector URL');
  const inspector = await Inspector.connect(inspectorUrl);
  let environmentId: number | undefined;
  const runIds: string[] = [];
  try {
    const nats = new NatsRequester(nc);
    const environment = await nats.call(ENVIRONMENT_REQUESTS.resolve, {
      uuid: stack.environmentUuid,
    });
    environmentId = environment.id;
    const caller: Caller = {
      accountId: environment.accountId,
      environmentId: environment.id,
      environmentUuid: environment.uuid,
      environmentName: environment.name,
    };
    const headers = { authorization: `Bearer ${stack.secretKey}`, 'content-type': 'application/json' };
    for (const [path, body] of [
      [
        '/integrations',
        {
          provider: 'bench-upstream',
          unique_key: 'bench',
          credentials: { type: 'OAUTH2', client_id: 'bench', client_secret: 'bench-secret' },
        },
      ],
      [
        '/connections',
        {
          provider_config_key: 'bench',
          connection_id: 'bench-1',
          credentials: { type: 'OAUTH2', access_token: 'bench-token' },
          connection_config: { origin: 'http://127.0.0.1:9' },
        },
      ],
    ] as const) {
      const res = await fetch(`${stack.gatewayUrl}${path}`, {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
      });
      if (res.status >= 300) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    }

    // The bench plays the orchestrator's part: a sync's writes are taken only from its RUNNING run
    // (`beginSyncRun`), so each run is recorded as such first, under one sync row.
    const [syncRow] = await cleanupDb.$queryRaw<{ id: string }[]>`
      INSERT INTO orchestrator.syncs (id, environment_id, provider_config_key, connection_id, name, variant, updated_at)
      VALUES (${randomUUID()}::uuid, ${environment.id}, 'bench', 'bench-1', 'bench-sync', 'base', now())
      ON CONFLICT (environment_id, provider_config_key, connection_id, name, variant) DO UPDATE SET updated_at = now()
      RETURNING id::text AS id`;
    const runSync: RunSync = async (code) => {
      const runId = randomUUID();
      runIds.push(runId);
      await cleanupDb.$executeRaw`
        INSERT INTO orchestrator.sync_runs (id, sync_id, status, type, workflow_id, attempts)
        VALUES (${runId}::uuid, ${syncRow!.id}::uuid, 'RUNNING', 'INCREMENTAL', 'bench-records', 1)`;
      const request: FunctionRunRequest = {
        caller,
        invocationId: runId,
        function: {
          id: 'bench-sync',
          name: 'bench-sync',
          type: 'sync',
          version: '1.0.0',
          codeSha256: createHash('sha256').update(code).digest('hex'),
          code,
        },
        connection: { connectionId: 'bench-1', providerConfigKey: 'bench', provider: 'bench-upstream' },
        variant: 'base',
        sync: {
          syncId: 'bench',
          lastSyncDate: null,
          models: ['BenchRecord'],
          trackDeletes: false,
          mode: 'full',
        },
        attempt: 1,
        depth: 0,
        limits: {},
      };
      const result = await nats.call(FUNCTIONS_REQUESTS.run, request, {
        timeoutMs: 3_600_000,
      });
      await cleanupDb.$executeRaw`
        UPDATE orchestrator.sync_runs SET status = 'SUCCESS', finished_at = now() WHERE id = ${runId}::uuid`;
      if (result.status !== 'success') throw new Error(`sync run failed: ${JSON.stringify(result.error)}`);
      return result;
    };

    // The gateway's page request, sent by the bench itself: the orchestrator and the NATS hop without the gateway.
    const pageOverNats: PageOverNats = async (cursor) => {
      const page = await nats.requestRaw<RecordsListReply>(RECORDS_SUBJECTS.list, {
        caller,
        providerConfigKey: 'bench',
        connectionId: 'bench-1',
        model: 'BenchRecord',
        limit: 1000,
        ...(cursor ? { cursor } : {}),
        checkConnection: true,
      });
      return page.meta.next_cursor;
    };
    const path =
      store && storeFigures ? await pathAndGet(stack, runSync, store, headers, pageOverNats) : undefined;
    if (SETTINGS.only === 'get') {
      if (path && storeFigures) {
        console.log('\n| write | records | records/s | vs plain upsert (insert / update) | vs COPY |');
        console.log('|---|---|---|---|---|');
        printPathRows(path, storeFigures);
        printPathAndGet(path, storeFigures);
      }
      return;
    }
    const memory = await memoryRun(stack, runSync, inspector);

    let sha = '';
    try {
      sha = execSync('git rev-parse --short HEAD', { encoding: 'utf8' }).trim();
    } catch {
      // not a checkout
    }
    console.log(
      `\ndate ${new Date().toISOString()} | ${os.cpus()[0]?.model ?? '?'} × ${os.cpus().length} | load ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')} | node ${process.version} | git ${sha}`,
    );
    console.log(
      `records of ${Buffer.byteLength(JSON.stringify(record(0, 1)))} bytes of JSON, batches of ${BATCH}\n`,
    );
    console.log('| write | records | records/s | vs plain upsert (insert / update) | vs COPY |');
    console.log('|---|---|---|---|---|');
    if (path && storeFigures) printPathRows(path, storeFigures);
    console.log(
      `| whole path, memory run (all new) | ${fmt(memory.m)} | ${fmt(perSecond(memory.m, memory.memoryMs))} | | |`,
    );
    if (path && storeFigures) printPathAndGet(path, storeFigures);
    printMemory(memory);
  } finally {
    inspector.close();
    await nc.drain().catch(() => undefined);
    await stack.stop();
    // What the bench wrote: the store's own environment, and the stack's (the sync runs').
    for (const env of [store?.environmentId, environmentId]) {
      if (env === undefined) continue;
      await cleanupDb.$executeRaw(Prisma.sql`DELETE FROM orchestrator.records WHERE environment_id = ${env}`);
      await cleanupDb.$executeRaw(
        Prisma.sql`DELETE FROM orchestrator.record_counts WHERE environment_id = ${env}`,
      );
    }
    if (runIds.length > 0) {
      const ids = Prisma.join(runIds.map((id) => Prisma.sql`${id}::uuid`));
      await cleanupDb.$executeRaw(Prisma.sql`DELETE FROM orchestrator.record_seen WHERE run_id IN (${ids})`);
      await cleanupDb.$executeRaw(
        Prisma.sql`DELETE FROM orchestrator.record_run_counts WHERE run_id IN (${ids})`,
      );
      await cleanupDb.$executeRaw(Prisma.sql`DELETE FROM orchestrator.sync_runs WHERE id IN (${ids})`);
    }
    if (environmentId !== undefined) {
      await cleanupDb.$executeRaw(
        Prisma.sql`DELETE FROM orchestrator.syncs WHERE environment_id = ${environmentId} AND name = 'bench-sync'`,
      );
    }
    await cleanupDb.$disconnect();
    await store?.pool.end();
  }
}

/** `--only=store`: what the store phase wrote, then its connections. */
async function cleanStore(s: StoreRun): Promise<void> {
  await s.db.$executeRaw`DELETE FROM orchestrator.records WHERE environment_id = ${s.environmentId}`;
  await s.db.$executeRaw`DELETE FROM orchestrator.record_counts WHERE environment_id = ${s.environmentId}`;
  await s.db.$disconnect();
  await s.pool.end();
}

type StoreRun = Awaited<ReturnType<typeof benchStore>>;

/** Phases 2 and 3: the whole path, then `GET /records` beside the store's own page read and bare SQL. */
type PageOverNats = (cursor: string | null) => Promise<string | null>;

async function pathAndGet(
  stack: Stack,
  runSync: RunSync,
  store: StoreRun,
  headers: Record<string, string>,
  pageOverNats: PageOverNats,
) {
  const n = SETTINGS.pathRecords;
  console.log(`whole path: a sync saving ${fmt(n)} new records...`);
  const pathInsertMs = await timed(() => runSync(syncBundle(n, 'new')));
  let pathMixedMs = NaN;
  if (SETTINGS.only !== 'get') {
    console.log('whole path: the same ids again, 50 % unchanged...');
    pathMixedMs = await timed(() => runSync(syncBundle(n, 'half-changed')));
  }

  console.log(`GET /records?limit=1000, ${SETTINGS.getRequests} pages...`);
  // The client runs in a process of its own (get-client.ts): its heap is a client's, not the bench's.
  const client = await GetClient.start();
  // Warm-up (JIT, connections), not counted.
  await client.ask({ kind: 'warm', pages: SETTINGS.getWarmup, gatewayUrl: stack.gatewayUrl, headers });
  const { cpuMicros } = await import('../tools/proc');
  const pids = {
    gateway: stack.services.gateway.process.pid!,
    orchestrator: stack.services['sync-orchestrator'].process.pid!,
  };
  const gcLinesBefore = gcLines(stack.logs('gateway'));
  for (const name of PROFILED) stack.services[name as keyof typeof stack.services]?.process.kill('SIGUSR2');
  const cpuBefore = { gateway: cpuMicros(pids.gateway), orchestrator: cpuMicros(pids.orchestrator) };
  const measured = await client.ask({ kind: 'measure', pages: SETTINGS.getRequests });
  if (measured.kind !== 'measured') throw new Error('the GET client answered out of turn');
  const cpuPerPage = {
    gateway: (cpuMicros(pids.gateway) - cpuBefore.gateway) / 1000 / SETTINGS.getRequests,
    orchestrator: (cpuMicros(pids.orchestrator) - cpuBefore.orchestrator) / 1000 / SETTINGS.getRequests,
    client: measured.cpuMicros / 1000 / SETTINGS.getRequests,
  };
  for (const name of PROFILED) stack.services[name as keyof typeof stack.services]?.process.kill('SIGUSR2');
  const { parsedMs: getMs, headersMs, lastByteMs, pageBytes } = measured;
  const gatewayLogs = stack.logs('gateway');
  const gatewayGcs = gcLines(gatewayLogs) - gcLinesBefore;
  if (SETTINGS.gatewayV8Flags) {
    // The gateway's output during the GET phase (its --trace-gc lines), for reading by hand.
    writeFileSync(join(os.tmpdir(), 'bench-records-gateway.log'), gatewayLogs);
  }
  await client.stop();
  for (const list of [getMs, headersMs, lastByteMs]) list.sort((a, b) => a - b);
  // The same pages asked of the orchestrator over NATS by the bench (no gateway, no HTTP).
  const natsMs: number[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < Math.min(50, SETTINGS.getRequests); i++) {
    const started = performance.now();
    cursor = await pageOverNats(cursor);
    natsMs.push(performance.now() - started);
  }
  natsMs.sort((a, b) => a - b);
  // The same page read by the store in this process (SQL + decrypt) and as bare SQL.
  const storeListMs: number[] = [];
  const sqlMs: number[] = [];
  for (let i = 0; i < 50; i++) {
    storeListMs.push(await timed(() => store.store.list(store.scope, 'BenchRecord', { limit: 1000 })));
    sqlMs.push(
      await timed(
        () => store.db.$queryRaw`
          SELECT id, external_id, payload, created_at, updated_at FROM orchestrator.records
          WHERE environment_id = ${store.environmentId} AND provider_config_key = 'bench'
            AND connection_id = ${store.scope.connectionId} AND model = 'BenchRecord'
          ORDER BY updated_at, id LIMIT 1001`,
      ),
    );
  }
  storeListMs.sort((a, b) => a - b);
  sqlMs.sort((a, b) => a - b);
  return {
    pathInsertMs,
    pathMixedMs,
    getMs,
    headersMs,
    lastByteMs,
    pageBytes,
    cpuPerPage,
    gatewayGcs,
    natsMs,
    storeListMs,
    sqlMs,
  };
}

/** The GET phase's client process (get-client.ts): one command at a time, its answer awaited. */
class GetClient {
  private constructor(private readonly child: ChildProcess) {}

  static async start(): Promise<GetClient> {
    const child = fork(join(__dirname, 'get-client.js'), [], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    await new Promise<void>((resolve, reject) => child.once('spawn', resolve).once('error', reject));
    return new GetClient(child);
  }

  ask(command: GetClientCommand): Promise<Exclude<GetClientAnswer, { kind: 'failed' }>> {
    return new Promise((resolve, reject) => {
      const exited = (code: number | null) => reject(new Error(`the GET client exited (${code})`));
      this.child.once('exit', exited);
      this.child.once('message', (answer: GetClientAnswer) => {
        this.child.off('exit', exited);
        if (answer.kind === 'failed') reject(new Error(answer.message));
        else resolve(answer);
      });
      this.child.send(command);
    });
  }

  async stop(): Promise<void> {
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.disconnect();
    await exited;
  }
}

/** `--trace-gc` lines (scavenges and mark-compacts) in a service's output. */
const gcLines = (logs: string) =>
  (logs.match(/ms: (Scavenge|Mark-Compact|Minor Mark-Sweep|Mark-Sweep)/g) ?? []).length;

/** The whole path's two rows of the write table. */
function printPathRows(r: Awaited<ReturnType<typeof pathAndGet>>, s: ReturnType<typeof printStore>): void {
  const n = SETTINGS.pathRecords;
  const pathInsert = perSecond(n, r.pathInsertMs);
  const pathMixed = perSecond(n, r.pathMixedMs);
  console.log(
    `| whole path (sync batchSave), all new | ${fmt(n)} | ${fmt(pathInsert)} | ${(pathInsert / s.upsertIns).toFixed(2)} | ${(pathInsert / s.copy).toFixed(2)} |`,
  );
  // `--only=get` writes no 50 %-unchanged run.
  if (Number.isNaN(r.pathMixedMs)) return;
  console.log(
    `| **whole path, 50 % unchanged** | ${fmt(n)} | ${fmt(pathMixed)} | ${(pathMixed / s.upsertUpd).toFixed(2)} | ${(pathMixed / s.copy).toFixed(2)} |`,
  );
}

/** The targets and the GET figures, after the write table. */
function printPathAndGet(r: Awaited<ReturnType<typeof pathAndGet>>, s: ReturnType<typeof printStore>): void {
  const pathMixed = perSecond(SETTINGS.pathRecords, r.pathMixedMs);
  const met = (ok: boolean) => (ok ? 'met' : 'MISSED');
  console.log(
    `\nstore, 50 % unchanged: ${fmt(s.storeMixed)}/s (target ≥ ${fmt(TARGETS.storePerSecond)}: ${met(s.storeMixed >= TARGETS.storePerSecond)})`,
  );
  if (!Number.isNaN(r.pathMixedMs)) {
    console.log(
      `whole path, 50 % unchanged: ${fmt(pathMixed)}/s (target ≥ ${fmt(TARGETS.pathPerSecond)}: ${met(pathMixed >= TARGETS.pathPerSecond)}); whole path / store = ${(pathMixed / s.storeMixed).toFixed(2)}`,
    );
  }
  const getP50 = percentile(r.getMs, 0.5);
  console.log(
    `\nGET /records limit=1000 (${SETTINGS.getRequests} pages after ${SETTINGS.getWarmup} not counted; the client in its own process): p50 ${getP50.toFixed(1)} ms, p90 ${percentile(r.getMs, 0.9).toFixed(1)} ms, p99 ${percentile(r.getMs, 0.99).toFixed(1)} ms (target p50 ≤ ${TARGETS.getP50Ms} ms: ${met(getP50 <= TARGETS.getP50Ms)})`,
  );
  console.log(
    `GET phase, p50 to the response headers ${percentile(r.headersMs, 0.5).toFixed(1)} ms, to the last byte ${percentile(r.lastByteMs, 0.5).toFixed(1)} ms (p90 ${percentile(r.lastByteMs, 0.9).toFixed(1)}), with the client's JSON.parse ${getP50.toFixed(1)} ms; page ${fmt(r.pageBytes)} bytes; CPU per page: gateway ${r.cpuPerPage.gateway.toFixed(1)} ms, sync-orchestrator ${r.cpuPerPage.orchestrator.toFixed(1)} ms, client ${r.cpuPerPage.client.toFixed(1)} ms; load ${os.loadavg()[0]!.toFixed(1)}${SETTINGS.gatewayV8Flags.includes('trace-gc') ? `; gateway GCs ${r.gatewayGcs} (${(r.gatewayGcs / SETTINGS.getRequests).toFixed(1)} per page)` : ''}`,
  );
  console.log(
    `the page over NATS from the bench (orchestrator + NATS, no gateway), p50 ${percentile(r.natsMs, 0.5).toFixed(1)} ms`,
  );
  console.log(
    `same page in-process: store.list p50 ${percentile(r.storeListMs, 0.5).toFixed(1)} ms (GET / store.list = ${(getP50 / percentile(r.storeListMs, 0.5)).toFixed(2)}), bare SQL p50 ${percentile(r.sqlMs, 0.5).toFixed(1)} ms (GET / SQL = ${(getP50 / percentile(r.sqlMs, 0.5)).toFixed(2)})`,
  );
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
