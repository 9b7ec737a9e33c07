import { randomInt, randomUUID } from 'node:crypto';
import { MasterKeyring } from '@switchboard/crypto';
import { createPgPool, createPrismaClient, type PgPool, type PrismaClient } from '@switchboard/db';
import { RecordsStore, type RecordScope } from '@switchboard/records-store';
import { testInfrastructure } from '@switchboard/testing';
import { holdSyncRun } from './sync-run-fence';

jest.setTimeout(60_000);

/** The sync run fence on the records store's writes, against a real Postgres. */
describe('holdSyncRun (records writes)', () => {
  let db: PrismaClient;
  let pool: PgPool;
  let store: RecordsStore;
  // A random environment keeps this file's rows apart from every other test's.
  const environmentId = randomInt(1_000_000, 2_000_000_000);
  const newScope = (): RecordScope => ({
    environmentId,
    providerConfigKey: 'fake-crm',
    connectionId: `conn-${randomUUID()}`,
  });
  const items = (from: number, to: number) =>
    Array.from({ length: to - from }, (_, i) => ({ id: from + i, name: `item ${from + i}` }));
  const all = async (scope: RecordScope, model: string) =>
    (await store.list(scope, model, { limit: 10_000 })).records;

  beforeAll(async () => {
    const url = (await testInfrastructure()).databaseUrl;
    db = createPrismaClient(url, { poolSize: 4 });
    pool = createPgPool(url, { poolSize: 4 });
    store = new RecordsStore(pool, new MasterKeyring(`1:${MasterKeyring.generateKeyMaterial()}`));
  });

  afterAll(async () => {
    await db.$executeRaw`DELETE FROM orchestrator.records WHERE environment_id = ${environmentId}`;
    await db.$executeRaw`DELETE FROM orchestrator.record_counts WHERE environment_id = ${environmentId}`;
    await db.$executeRaw`DELETE FROM orchestrator.syncs WHERE environment_id = ${environmentId}`;
    await db.$disconnect();
    await pool.end();
  });

  it('fences a write inside its transaction: a stale attempt, a closed run or a run of another scope writes nothing', async () => {
    const scope = newScope();
    const syncId = randomUUID();
    const runId = randomUUID();
    await db.sync.create({
      data: {
        id: syncId,
        environmentId,
        providerConfigKey: scope.providerConfigKey,
        connectionId: scope.connectionId,
        name: 'fenced',
      },
    });
    await db.syncRun.create({
      data: {
        id: runId,
        syncId,
        status: 'RUNNING',
        type: 'INCREMENTAL',
        workflowId: `wf-${runId}`,
        attempts: 2,
      },
    });
    const fence = (attempt: number, over: Partial<Parameters<typeof holdSyncRun>[2]> = {}) => ({
      fence: (tx: Parameters<typeof holdSyncRun>[0]) =>
        holdSyncRun(tx, { runId, attempt }, { ...scope, variant: 'base', ...over }),
    });

    expect(await store.write(scope, 'Contact', items(0, 3), 'save', runId, fence(2))).toMatchObject({
      added: 3,
    });
    await expect(store.write(scope, 'Contact', items(3, 6), 'save', runId, fence(1))).rejects.toMatchObject({
      code: 'sync_run_superseded',
    });
    await expect(
      store.deleteUnseenKeys(scope, 'Contact', randomUUID(), 10, fence(1).fence),
    ).rejects.toMatchObject({ code: 'sync_run_superseded' });
    // The running run's id, its latest attempt, but a write for another connection, integration,
    // environment, variant or sync: refused, whatever the run's state.
    for (const other of [
      { connectionId: 'someone-else' },
      { providerConfigKey: 'other-integration' },
      { environmentId: environmentId + 1 },
      { variant: 'eu' },
      { syncName: 'another-sync' },
    ]) {
      await expect(
        store.write(scope, 'Contact', items(6, 9), 'save', runId, fence(2, other)),
      ).rejects.toMatchObject({ code: 'forbidden' });
    }
    // The sync's own name passes.
    expect(
      await store.write(scope, 'Contact', items(0, 1), 'save', runId, fence(2, { syncName: 'fenced' })),
    ).toMatchObject({ unchanged: 1 });

    await db.syncRun.update({ where: { id: runId }, data: { status: 'SUCCESS' } });
    await expect(store.write(scope, 'Contact', items(0, 1), 'delete', runId, fence(2))).rejects.toMatchObject(
      { code: 'sync_run_superseded' },
    );

    // Nothing of the refused writes is there: no record, no deletion, no count.
    const records = await all(scope, 'Contact');
    expect(records.map((r) => r.id).sort()).toEqual(['0', '1', '2']);
    expect(records.every((r) => r._nango_metadata.deleted_at === null)).toBe(true);
    expect(await store.runCounts(runId)).toEqual({ Contact: { added: 3, updated: 0, deleted: 0 } });
    expect(await store.recordCounts(scope, ['Contact'])).toEqual({ Contact: 3 });
    // The connection the refused transactions ran on went back to the pool usable.
    expect(await store.write(scope, 'Other', items(0, 1), 'save', randomUUID())).toMatchObject({ added: 1 });
  });
});
