/**
 * Phases 2 and 3: the whole path (a sync's batchSave through the stack), then `GET /records` through the
 * gateway, and their rows and figures.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import type { Stack } from '@switchboard/testing';
import { fmt, perSecond, percentile, syncBundle, timed, type RunSync } from './common';
import type { GetClientAnswer, GetClientCommand } from './get-client';
import { PROFILED, SETTINGS, TARGETS } from './settings';
import type { printStore, StoreRun } from './store';

/** The gateway's page request sent by the bench over NATS; the next cursor. */
export type PageOverNats = (cursor: string | null) => Promise<string | null>;

/** Phases 2 and 3: the whole path, then `GET /records` beside the store's own page read and bare SQL. */
export async function pathAndGet(
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
export function printPathRows(
  r: Awaited<ReturnType<typeof pathAndGet>>,
  s: ReturnType<typeof printStore>,
): void {
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
export function printPathAndGet(
  r: Awaited<ReturnType<typeof pathAndGet>>,
  s: ReturnType<typeof printStore>,
): void {
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
