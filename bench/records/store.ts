/**
 * Phase 1: the records store alone, in this process against Postgres, beside the ceilings (a plain batched
 * upsert through Prisma and node-postgres, and a COPY), then a page read in-process.
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes, randomInt, randomUUID } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { MasterKeyring } from '@switchboard/crypto';
import { createPgPool, createPrismaClient } from '@switchboard/db';
import { fmt, halfChanged, perSecond, percentile, record, timed } from './common';
import { BATCH, SETTINGS } from './settings';

/** What the bench needs of sync-orchestrator's RecordsStore (loaded from its build: apps are not packages). */
export interface Store {
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
export interface Scope {
  environmentId: number;
  providerConfigKey: string;
  connectionId: string;
}

export async function benchStore(databaseUrl: string) {
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
export function printStore(s: Awaited<ReturnType<typeof benchStore>>) {
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
export async function benchPage(s: Awaited<ReturnType<typeof benchStore>>): Promise<void> {
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

/** `--only=store`: what the store phase wrote, then its connections. */
export async function cleanStore(s: StoreRun): Promise<void> {
  await s.db.$executeRaw`DELETE FROM orchestrator.records WHERE environment_id = ${s.environmentId}`;
  await s.db.$executeRaw`DELETE FROM orchestrator.record_counts WHERE environment_id = ${s.environmentId}`;
  await s.db.$disconnect();
  await s.pool.end();
}

export type StoreRun = Awaited<ReturnType<typeof benchStore>>;
