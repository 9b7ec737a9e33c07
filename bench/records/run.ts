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
import { execSync } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import os from 'node:os';
import {
  RECORDS_SUBJECTS,
  type Caller,
  type FunctionRunRequest,
  type RecordsListReply,
  ENVIRONMENT_REQUESTS,
  FUNCTIONS_REQUESTS,
} from '@switchboard/contracts';
import { createPrismaClient, Prisma } from '@switchboard/db';
import { NatsRequester } from '@switchboard/messaging';
import type { Stack } from '@switchboard/testing';
import { connect } from 'nats';
import { Inspector } from '../tools/inspector';
import { writeBenchProvidersFile } from '../tools/upstream';
import { BATCH, SETTINGS, args } from './settings';
import { fmt, perSecond, record, type RunSync } from './common';
import { memoryRun, printMemory } from './memory';
import { pathAndGet, printPathAndGet, printPathRows, type PageOverNats } from './path-get';
import { benchServiceEnv } from './stack-env';
import { benchPage, benchStore, cleanStore, printStore } from './store';

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

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
