import { randomUUID } from 'node:crypto';
import type { PrismaClient } from '@switchboard/db';
import type { RecordsStore } from '@switchboard/records-store';
import { RecordsTestWorld } from '@switchboard/records-store/testing';
import { testInfrastructure } from '@switchboard/testing';
import { holdSyncRun } from './sync-run-fence';

jest.setTimeout(60_000);

/** The sync run fence on the records store's writes, against a real Postgres. */
describe('holdSyncRun (records writes)', () => {
  const world = new RecordsTestWorld();
  const { environmentId, newScope, items, all } = world;
  let db: PrismaClient;
  let store: RecordsStore;

  beforeAll(async () => {
    ({ db, store } = await world.open((await testInfrastructure()).databaseUrl, 4));
  });

  afterAll(() => world.close());

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
