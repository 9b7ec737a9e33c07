import { randomUUID } from 'node:crypto';
import type { PgPool, PrismaClient } from '@switchboard/db';
import { testInfrastructure } from '@switchboard/testing';
import { Cursor } from './record-keys';
import type { RecordsStore } from './records.store';
import { RecordsStoreError } from './records-store.errors';
import type { StoredRecord, WriteFence } from './records.types';
import { RecordsTestWorld } from './testing';

jest.setTimeout(60_000);

/** The records store against a real Postgres: Nango's semantics, counts, cursors, encryption at rest. */
describe('RecordsStore (Postgres)', () => {
  const world = new RecordsTestWorld();
  const { environmentId, newScope, items, all } = world;
  let db: PrismaClient;
  let pool: PgPool;
  let store: RecordsStore;
  const byId = (records: StoredRecord[]) => new Map(records.map((r) => [r.id, r]));
  const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?\+00:00$/;

  beforeAll(async () => {
    // A session time zone far from UTC: the API's timestamps must still read `+00:00`.
    const url = new URL((await testInfrastructure()).databaseUrl);
    url.searchParams.set('options', '-c TimeZone=Pacific/Kiritimati');
    ({ db, pool, store } = await world.open(url.toString(), 10));
  });

  afterAll(() => world.close());

  it('saves records with Nango ids and metadata, and counts what a run added', async () => {
    const scope = newScope();
    const run = randomUUID();
    const result = await store.write(scope, 'Contact', items(0, 3), 'save', run);
    expect(result).toEqual({ added: 3, updated: 0, deleted: 0, unchanged: 0, nonUniqueKeys: [] });

    const records = await all(scope, 'Contact');
    expect(records.map((r) => r.id)).toEqual(expect.arrayContaining(['0', '1', '2']));
    const first = byId(records).get('1')!;
    expect(first.name).toBe('item 1');
    const meta = first._nango_metadata;
    expect(meta.last_action).toBe('ADDED');
    expect(meta.first_seen_at).toMatch(TIMESTAMP);
    expect(meta.last_modified_at).toBe(meta.first_seen_at);
    expect(meta.deleted_at).toBeNull();
    expect(meta.pruned_at).toBeNull();
    const decoded = Buffer.from(meta.cursor, 'base64').toString();
    expect(decoded).toMatch(/^.+\+00:00\|\|[0-9a-f-]{36}$/);
    expect(decoded.startsWith(`${meta.last_modified_at}||`)).toBe(true);

    expect(await store.runCounts(run)).toEqual({ Contact: { added: 3, updated: 0, deleted: 0 } });
    expect(await store.recordCounts(scope, ['Contact', 'Other'])).toEqual({ Contact: 3, Other: 0 });
  });

  it('keeps quotes, backslashes and braces in ids, connection ids and models (statements sent with BEGIN and COMMIT)', async () => {
    const scope = { ...newScope(), connectionId: `it's \\ "odd", {x} ${randomUUID()}` };
    const model = `Model::v'1\\"`;
    const odd = ['a"b', 'c\\d', 'e,f', '{g}', "h'i", 'NULL'];
    const run = randomUUID();
    const saved = await store.write(
      scope,
      model,
      odd.map((id) => ({ id, name: id })),
      'save',
      run,
    );
    expect(saved).toMatchObject({ added: 6, unchanged: 0 });
    const again = await store.write(
      scope,
      model,
      odd.map((id) => ({ id, name: id === 'e,f' ? 'x' : id })),
      'save',
      run,
    );
    expect(again).toMatchObject({ added: 0, updated: 1, unchanged: 5 });
    const records = byId(await all(scope, model));
    expect([...records.keys()].sort()).toEqual([...odd].sort());
    expect(records.get('e,f')!.name).toBe('x');
    expect(records.get('c\\d')!.name).toBe('c\\d');
    expect(await store.runCounts(run)).toEqual({ [model]: { added: 6, updated: 1, deleted: 0 } });
    expect(await store.recordCounts(scope, [model])).toEqual({ [model]: 6 });
    const deleted = await store.deleteUnseen(scope, model, randomUUID());
    expect(deleted).toBe(6);
    expect(await store.recordCounts(scope, [model])).toEqual({ [model]: 0 });
  });

  it('keeps updated_at of unchanged records, so modified_after returns only what changed', async () => {
    const scope = newScope();
    await store.write(scope, 'Contact', items(0, 4), 'save', randomUUID());
    const before = byId(await all(scope, 'Contact'));
    await new Promise((r) => setTimeout(r, 20));

    const run = randomUUID();
    const changed = items(0, 4).map((r) => (r.id === 2 ? { ...r, name: 'renamed' } : r));
    const result = await store.write(scope, 'Contact', changed, 'save', run);
    expect(result).toMatchObject({ added: 0, updated: 1, unchanged: 3 });

    const after = byId(await all(scope, 'Contact'));
    for (const id of ['0', '1', '3']) {
      expect(after.get(id)!._nango_metadata.last_modified_at).toBe(
        before.get(id)!._nango_metadata.last_modified_at,
      );
      expect(after.get(id)!._nango_metadata.last_action).toBe('ADDED');
    }
    const two = after.get('2')!;
    expect(two.name).toBe('renamed');
    expect(two._nango_metadata.last_action).toBe('UPDATED');
    expect(two._nango_metadata.first_seen_at).toBe(before.get('2')!._nango_metadata.first_seen_at);

    const since = (await all(scope, 'Contact', { modifiedAfter: two._nango_metadata.last_modified_at })).map(
      (r) => r.id,
    );
    expect(since).toEqual(['2']);
    expect(await store.runCounts(run)).toEqual({ Contact: { added: 0, updated: 1, deleted: 0 } });
  });

  it('drops duplicate ids inside a batch (the first one wins) and refuses records without an id', async () => {
    const scope = newScope();
    const result = await store.write(
      scope,
      'Contact',
      [
        { id: 'a', v: 1 },
        { id: 'a', v: 2 },
        { id: 'b', v: 1 },
      ],
      'save',
      randomUUID(),
    );
    expect(result).toMatchObject({ added: 2, nonUniqueKeys: ['a'] });
    expect(byId(await all(scope, 'Contact')).get('a')!.v).toBe(1);

    await expect(
      store.write(scope, 'Contact', [{ id: 'c' }, { name: 'no id' }], 'save', randomUUID()),
    ).rejects.toMatchObject({ code: 'invalid_body' });
    expect((await all(scope, 'Contact')).map((r) => r.id).sort()).toEqual(['a', 'b']);
  });

  it('soft-deletes (payload kept, counted once), and a record that comes back counts as added', async () => {
    const scope = newScope();
    await store.write(scope, 'Contact', items(0, 3), 'save', randomUUID());

    const run = randomUUID();
    const deleted = await store.write(scope, 'Contact', [{ id: 1 }, { id: 99 }], 'delete', run);
    expect(deleted).toMatchObject({ deleted: 1, unchanged: 1 });
    expect(await store.write(scope, 'Contact', [{ id: 1 }], 'delete', run)).toMatchObject({
      deleted: 0,
      unchanged: 1,
    });
    expect(await store.runCounts(run)).toEqual({ Contact: { added: 0, updated: 0, deleted: 1 } });
    expect(await store.recordCounts(scope, ['Contact'])).toEqual({ Contact: 2 });

    const gone = await all(scope, 'Contact', { filter: 'deleted' });
    expect(gone.map((r) => r.id)).toEqual(['1']);
    expect(gone[0]!.name).toBe('item 1');
    expect(gone[0]!._nango_metadata.last_action).toBe('DELETED');
    expect(gone[0]!._nango_metadata.deleted_at).toMatch(TIMESTAMP);
    // Nango's quirk: updated,deleted and added,deleted leave deleted records out.
    expect((await all(scope, 'Contact', { filter: 'UPDATED,DELETED' })).map((r) => r.id)).toEqual([]);
    expect((await all(scope, 'Contact', { filter: 'added,deleted' })).map((r) => r.id).sort()).toEqual([
      '0',
      '2',
    ]);
    expect((await all(scope, 'Contact', { filter: 'added,updated' })).map((r) => r.id).sort()).toEqual([
      '0',
      '2',
    ]);

    const back = await store.write(scope, 'Contact', items(1, 2), 'save', randomUUID());
    expect(back).toMatchObject({ added: 1, updated: 0 });
    expect(await store.recordCounts(scope, ['Contact'])).toEqual({ Contact: 3 });
  });

  it('soft-deletes what a run did not see, across its attempts, and counts it in the run', async () => {
    const scope = newScope();
    await store.write(scope, 'Contact', items(0, 10), 'save', randomUUID());

    const run = randomUUID();
    // Two attempts of one run (same run id), each saving part of the data.
    await store.write(scope, 'Contact', items(0, 3), 'save', run);
    await store.write(scope, 'Contact', items(3, 6), 'save', run);
    expect(await store.deleteUnseen(scope, 'Contact', run)).toBe(4);
    expect(await store.deleteUnseen(scope, 'Contact', run)).toBe(0);

    expect((await all(scope, 'Contact', { filter: 'deleted' })).map((r) => r.id).sort()).toEqual([
      '6',
      '7',
      '8',
      '9',
    ]);
    expect(await store.runCounts(run)).toEqual({ Contact: { added: 0, updated: 0, deleted: 4 } });
    expect(await store.recordCounts(scope, ['Contact'])).toEqual({ Contact: 6 });
  });

  it('a deletion window spans runs: trackDeletesEnd keeps what any run of the window saved, even a failed one', async () => {
    const scope = newScope();
    await store.write(scope, 'Contact', items(0, 10), 'save', randomUUID());
    const seenRows = async (runs: string[]) =>
      (
        await pool.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM orchestrator.record_seen WHERE run_id = ANY($1::uuid[])',
          [runs],
        )
      ).rows[0]!.n;

    // A checkpointed full refresh: the first run opens the window, saves 0..3 and fails (its end forgets
    // what it saw, except what the open window needs); the next one joins the window, saves 3..6, ends it.
    const first = randomUUID();
    await store.openDeleteWindow(scope, 'Contact', first);
    await store.openDeleteWindow(scope, 'Contact', first);
    await store.write(scope, 'Contact', items(0, 3), 'save', first);
    await store.forgetRun(first);
    expect(await seenRows([first])).toBe(1);
    const second = randomUUID();
    await store.openDeleteWindow(scope, 'Contact', second);
    await store.write(scope, 'Contact', items(3, 6), 'save', second);
    const ended = await store.deleteUnseenKeys(scope, 'Contact', second, 100, undefined, true);
    expect({ deleted: ended.deleted, keys: [...ended.deletedKeys].sort() }).toEqual({
      deleted: 4,
      keys: ['6', '7', '8', '9'],
    });
    expect(await store.recordCounts(scope, ['Contact'])).toEqual({ Contact: 6 });
    // The window is closed and what its runs saw is gone with it; the next end counts that run alone.
    await store.forgetRun(second);
    expect(await seenRows([first, second])).toBe(0);
    const third = randomUUID();
    await store.write(scope, 'Contact', items(0, 5), 'save', third);
    expect((await store.deleteUnseenKeys(scope, 'Contact', third, 100, undefined, true)).deletedKeys).toEqual(
      ['5'],
    );

    // Without the window (deleteRecordsFromPreviousExecutions), only the run's own saves count.
    const fourth = randomUUID();
    await store.openDeleteWindow(scope, 'Contact', fourth);
    await store.write(scope, 'Contact', items(0, 2), 'save', fourth);
    const fifth = randomUUID();
    await store.write(scope, 'Contact', items(2, 4), 'save', fifth);
    expect((await store.deleteUnseenKeys(scope, 'Contact', fifth, 100)).deletedKeys.sort()).toEqual([
      '0',
      '1',
      '4',
    ]);

    // A full resync (or the records' deletion) drops an open window and what its runs saw.
    await store.closeDeleteWindows(scope, ['Contact']);
    expect(await seenRows([fourth])).toBe(0);
    await store.forgetRun(fifth);
  });

  it('pages with cursors in (updated_at, id) order without gaps or repeats', async () => {
    const scope = newScope();
    await store.write(scope, 'Contact', items(0, 15), 'save', randomUUID());
    await store.write(scope, 'Contact', items(15, 25), 'save', randomUUID());

    const seen: StoredRecord[] = [];
    let cursor: string | undefined;
    const sizes: number[] = [];
    for (;;) {
      const page = await store.list(scope, 'Contact', { limit: 10, ...(cursor ? { cursor } : {}) });
      sizes.push(page.records.length);
      seen.push(...page.records);
      if (!page.next_cursor) break;
      expect(page.next_cursor).toBe(page.records[page.records.length - 1]!._nango_metadata.cursor);
      cursor = page.next_cursor;
    }
    expect(sizes).toEqual([10, 10, 5]);
    expect(new Set(seen.map((r) => r.id)).size).toBe(25);
    const keys = seen.map((r) => Cursor.decode(r._nango_metadata.cursor)!);
    for (let i = 1; i < keys.length; i++) {
      const [a, b] = [keys[i - 1]!, keys[i]!];
      const order =
        Date.parse(a.sort) - Date.parse(b.sort) || a.sort.localeCompare(b.sort) || a.id.localeCompare(b.id);
      expect(order).toBeLessThan(0);
    }
    // The second batch was written later: all of it comes after the first.
    expect(
      seen
        .slice(15)
        .map((r) => Number(r.id))
        .sort((a, b) => a - b),
    ).toEqual(Array.from({ length: 10 }, (_, i) => 15 + i));

    await expect(
      store.list(scope, 'Contact', { limit: 10, cursor: 'bm90IGEgY3Vyc29y' }),
    ).rejects.toMatchObject({ code: 'invalid_cursor' });
    // ids select external ids; a byte budget shortens a page but keeps the cursor going.
    expect(
      (await all(scope, 'Contact', { externalIds: ['3', '4', 'nope'] })).map((r) => r.id).sort(),
    ).toEqual(['3', '4']);
    const small = await store.list(scope, 'Contact', { limit: 100, maxBytes: 1000 });
    expect(small.records.length).toBeGreaterThan(0);
    expect(small.records.length).toBeLessThan(25);
    expect(small.next_cursor).toBe(small.records[small.records.length - 1]!._nango_metadata.cursor);
  });

  it('keeps variants apart (Model::variant)', async () => {
    const scope = newScope();
    await store.write(scope, 'Contact', items(0, 2), 'save', randomUUID());
    await store.write(scope, 'Contact::eu', items(0, 5), 'save', randomUUID());
    expect(await store.recordCounts(scope, ['Contact', 'Contact::eu'])).toEqual({
      Contact: 2,
      'Contact::eu': 5,
    });
    expect(await all(scope, 'Contact::eu')).toHaveLength(5);

    expect(await store.deleteRecords(scope, ['Contact::eu'])).toBe(5);
    expect(await all(scope, 'Contact::eu')).toHaveLength(0);
    expect(await all(scope, 'Contact')).toHaveLength(2);
    expect(await store.recordCounts(scope, ['Contact', 'Contact::eu'])).toEqual({
      Contact: 2,
      'Contact::eu': 0,
    });
    expect(await store.deleteAllRecords(scope)).toBe(2);
    expect(await all(scope, 'Contact')).toHaveLength(0);
  });

  it('batchUpdate merges into existing records and ignores unknown ones', async () => {
    const scope = newScope();
    await store.write(
      scope,
      'Contact',
      [{ id: 'x', name: 'X', tags: ['a', 'b'], address: { city: 'Oslo', zip: '1' } }],
      'save',
      randomUUID(),
    );
    const result = await store.write(
      scope,
      'Contact',
      [
        { id: 'x', address: { city: 'Bergen' }, tags: ['c'] },
        { id: 'unknown', name: 'nobody' },
      ],
      'update',
      randomUUID(),
    );
    expect(result).toMatchObject({ added: 0, updated: 1, unchanged: 1 });
    const [x] = await all(scope, 'Contact');
    expect(x).toMatchObject({ id: 'x', name: 'X', tags: ['c', 'b'], address: { city: 'Bergen', zip: '1' } });
    expect(x!._nango_metadata.last_action).toBe('UPDATED');
    expect(await all(scope, 'Contact', { externalIds: ['unknown'] })).toHaveLength(0);
  });

  it('ignore_if_modified_after leaves alone records modified after the cursor, and moves the cursor with its writes', async () => {
    const scope = newScope();
    await store.write(scope, 'Contact', items(0, 3), 'save', randomUUID());
    const cursor = await store.lastCursor(scope, 'Contact');
    // Meanwhile a webhook run changes record 1.
    await store.write(scope, 'Contact', [{ id: 1, name: 'from webhook' }], 'save', randomUUID());

    const run = randomUUID();
    const stale = items(0, 3, { name: 'from sync' });
    const first = await store.write(scope, 'Contact', stale, 'save', run, {
      merging: { strategy: 'ignore_if_modified_after', cursor },
    });
    expect(first).toMatchObject({ updated: 2, unchanged: 1 });
    const records = byId(await all(scope, 'Contact'));
    expect(records.get('1')!.name).toBe('from webhook');
    expect(records.get('0')!.name).toBe('from sync');
    // The run's own writes do not block it: the next batch starts from its last write.
    expect(first.mergingCursor).not.toBe(cursor);
    const second = await store.write(scope, 'Contact', [{ id: 0, name: 'again' }], 'save', run, {
      merging: { strategy: 'ignore_if_modified_after', cursor: first.mergingCursor ?? null },
    });
    expect(second).toMatchObject({ updated: 1 });

    const override = await store.write(scope, 'Contact', [{ id: 1, name: 'override' }], 'save', randomUUID());
    expect(override).toMatchObject({ updated: 1 });
  });

  it('stores payloads sealed: the plaintext is not in the table', async () => {
    const scope = newScope();
    const marker = `secret-marker-${randomUUID()}`;
    await store.write(scope, 'Contact', [{ id: 'p', note: marker }], 'save', randomUUID());
    const rows = await db.$queryRaw<{ payload: Uint8Array; data_hash: string }[]>`
      SELECT payload, data_hash FROM orchestrator.records
      WHERE environment_id = ${environmentId} AND connection_id = ${scope.connectionId}`;
    expect(rows).toHaveLength(1);
    // The binary envelope (format byte 0x02, master key version 1), never the plaintext's bytes.
    const payload = Buffer.from(rows[0]!.payload);
    expect([...payload.subarray(0, 5)]).toEqual([2, 0, 0, 0, 1]);
    expect(payload.includes(marker)).toBe(false);
    expect((await all(scope, 'Contact'))[0]!.note).toBe(marker);
  });

  it('writes a page as bytes exactly as its records serialised, in every state (added, updated, deleted, pruned)', async () => {
    const scope = newScope();
    await store.write(scope, 'Contact', items(0, 6), 'save', randomUUID());
    await store.write(scope, 'Contact', [{ id: 1, name: 'changed' }], 'save', randomUUID());
    await store.write(scope, 'Contact', [{ id: 2 }], 'delete', randomUUID());
    const cursorOf3 = byId(await all(scope, 'Contact')).get('3')!._nango_metadata.cursor;
    await store.prune(scope, 'Contact', cursorOf3, 100);

    const records = await all(scope, 'Contact');
    const actions = new Map(records.map((r) => [r.id, r._nango_metadata]));
    expect(actions.get('1')!.last_action).toBe('UPDATED');
    expect(actions.get('2')!.last_action).toBe('DELETED');
    expect(actions.get('2')!.deleted_at).toMatch(TIMESTAMP);
    expect(actions.get('3')!.pruned_at).toMatch(TIMESTAMP);
    expect(actions.get('5')!.last_action).toBe('ADDED');
    // The page as bytes is the page as objects, serialised.
    const json = await store.listJson(scope, 'Contact', { limit: 100 });
    const text = Buffer.concat(
      json.recordsJson.map((c) => (typeof c === 'string' ? Buffer.from(c) : c)),
    ).toString();
    expect(text).toBe(records.map((r) => JSON.stringify(r)).join(','));
  });

  it('prunes payloads up to a cursor without moving updated_at', async () => {
    const scope = newScope();
    await store.write(scope, 'Contact', items(0, 5), 'save', randomUUID());
    const before = await all(scope, 'Contact');
    const until = before[2]!._nango_metadata.cursor;

    expect(await store.prune(scope, 'Contact', until, 2)).toEqual({ count: 2, has_more: true });
    expect(await store.prune(scope, 'Contact', until, 10)).toEqual({ count: 1, has_more: false });
    const after = await all(scope, 'Contact');
    expect(after.map((r) => r._nango_metadata.cursor)).toEqual(before.map((r) => r._nango_metadata.cursor));
    expect(after.slice(0, 3).every((r) => r._nango_metadata.pruned_at !== null && r.name === undefined)).toBe(
      true,
    );
    expect(after[3]!.name).toBe(before[3]!.name);

    // Saved again unchanged, a pruned record gets its payload back without looking modified.
    const resaved = await store.write(scope, 'Contact', items(0, 1), 'save', randomUUID());
    expect(resaved).toMatchObject({ unchanged: 1, updated: 0 });
    const zero = (await all(scope, 'Contact', { externalIds: ['0'] }))[0]!;
    expect(zero.name).toBe('item 0');
    expect(zero._nango_metadata.pruned_at).toBeNull();
    expect(zero._nango_metadata.last_modified_at).toBe(before[0]!._nango_metadata.last_modified_at);
  });

  it('serialises concurrent batches of one connection and model: counts stay exact', async () => {
    const scope = newScope();
    const run = randomUUID();
    // Overlapping batches at once: every record is added exactly once, whichever batch wins.
    const results = await Promise.all([
      store.write(scope, 'Contact', items(0, 600), 'save', run),
      store.write(scope, 'Contact', items(300, 900), 'save', run),
      store.write(scope, 'Contact', items(600, 1200), 'save', run),
    ]);
    expect(results.reduce((sum, r) => sum + r.added, 0)).toBe(1200);
    expect(results.reduce((sum, r) => sum + r.unchanged, 0)).toBe(600);
    expect(await store.runCounts(run)).toEqual({ Contact: { added: 1200, updated: 0, deleted: 0 } });
    expect(await store.recordCounts(scope, ['Contact'])).toEqual({ Contact: 1200 });
  });

  it('counts mixed batches exactly: adds, changes, unchanged, deletes and unseen deletes, over several chunks', async () => {
    const scope = newScope();
    const first = randomUUID();
    // 2500 records: three chunks of one statement each.
    expect(await store.write(scope, 'Deal', items(0, 2500), 'save', first)).toMatchObject({ added: 2500 });
    const run = randomUUID();
    // Half of them again unchanged, a quarter changed, 500 new.
    const batch = [...items(0, 1250), ...items(1250, 1875, { name: 'changed' }), ...items(2500, 3000)];
    expect(await store.write(scope, 'Deal', batch, 'save', run)).toMatchObject({
      added: 500,
      updated: 625,
      unchanged: 1250,
      deleted: 0,
    });
    // Deleting existing, already deleted and unknown records: only the first count.
    const deletes = [{ id: 0 }, { id: 1 }, { id: 1 }, { id: 'unknown' }];
    expect(await store.write(scope, 'Deal', deletes, 'delete', run)).toMatchObject({
      deleted: 2,
      unchanged: 1,
      nonUniqueKeys: ['1'],
    });
    expect(await store.write(scope, 'Deal', [{ id: 0 }], 'delete', run)).toMatchObject({ deleted: 0 });
    // The run saw 0..1875 and 2500..3000 (all of its chunks): 1875..2500 were not seen.
    expect(await store.deleteUnseen(scope, 'Deal', run)).toBe(625);
    expect(await store.runCounts(run)).toEqual({ Deal: { added: 500, updated: 625, deleted: 627 } });
    expect(await store.recordCounts(scope, ['Deal', 'Other'])).toEqual({ Deal: 3000 - 627, Other: 0 });
    const live = await all(scope, 'Deal', { filter: 'added,updated' });
    expect(live).toHaveLength(3000 - 627);
    expect(live.filter((r) => r.name === 'changed')).toHaveLength(625);
  });

  it('refuses a fenced write inside its transaction: nothing written, and the connection goes back usable', async () => {
    const scope = newScope();
    const runId = randomUUID();
    const calls: string[] = [];
    const refuse = async (tx: Parameters<WriteFence>[0]) => {
      // The fence runs inside the write's transaction: what it reads there is what the write will see.
      const { rows } = await tx.query<{ open: boolean }>('SELECT now() = statement_timestamp() AS open');
      calls.push(String(rows[0]?.open));
      throw new RecordsStoreError('forbidden', 'not this run');
    };
    const allow = async () => {
      calls.push('allowed');
    };

    expect(await store.write(scope, 'Contact', items(0, 3), 'save', runId, { fence: allow })).toMatchObject({
      added: 3,
    });
    await expect(
      store.write(scope, 'Contact', items(3, 6), 'save', runId, { fence: refuse }),
    ).rejects.toMatchObject({ code: 'forbidden' });
    await expect(
      store.write(scope, 'Contact', items(0, 1), 'delete', runId, { fence: refuse }),
    ).rejects.toMatchObject({ code: 'forbidden' });
    await expect(store.deleteUnseenKeys(scope, 'Contact', randomUUID(), 10, refuse)).rejects.toMatchObject({
      code: 'forbidden',
    });
    await expect(store.openDeleteWindow(scope, 'Contact', randomUUID(), refuse)).rejects.toMatchObject({
      code: 'forbidden',
    });
    // Inside BEGIN: now() is the transaction's start, not the statement's.
    expect(calls).toEqual(['allowed', 'false', 'false', 'false', 'false']);

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
