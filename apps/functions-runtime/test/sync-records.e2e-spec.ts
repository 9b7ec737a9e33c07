import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Nango } from '@nangohq/node';
import {
  environmentCaller,
  functionRunResultSchema,
  type Caller,
  type FunctionRunRequest,
  type FunctionRunResult,
  FUNCTIONS_REQUESTS,
} from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import { startStack, type Stack } from '@switchboard/testing';
import { connect, type NatsConnection } from 'nats';
import { Client } from 'pg';
import { writePagesProvidersFile } from './support/fake-pages-provider';

/**
 * The sync API of a script, end to end: a sync bundle compiled by the nango CLI (test/fixtures/
 * contacts-sync.cjs, from nango-project/fake/syncs/contacts.ts) runs on functions-runtime as the
 * orchestrator runs it (`functions.v1.run` with the sync context), saves, updates and deletes records
 * through the orchestrator into Postgres, and `@nangohq/node` reads them back through the gateway. The
 * test plays the orchestrator's part: it records each run RUNNING, as `beginSyncRun` does, before it asks
 * for it (the orchestrator refuses the writes of a run that is not).
 */

const SYNC_BUNDLE = readFileSync(join(__dirname, 'fixtures', 'contacts-sync.cjs'), 'utf8');
const PCK = 'fake-pages';

type ListedRecord = {
  id: string;
  name?: string;
  version?: number;
  pad?: string;
  _nango_metadata: Record<string, unknown>;
};

describe('a sync script saving records, read with listRecords', () => {
  let stack: Stack;
  let nc: NatsConnection;
  let nats: NatsRequester;
  let caller: Caller;
  let nango: Nango;
  let db: Client;

  /** Records the run as the orchestrator's `beginSyncRun` would (its sync row too, the first time). */
  const recordRun = async (runId: string, connectionId: string, variant: string, status: string) => {
    const sync = await db.query<{ id: string }>(
      `INSERT INTO orchestrator.syncs (id, environment_id, provider_config_key, connection_id, name, variant, updated_at)
       VALUES ($1, $2, $3, $4, 'contacts', $5, now())
       ON CONFLICT (environment_id, provider_config_key, connection_id, name, variant) DO UPDATE SET updated_at = now()
       RETURNING id`,
      [randomUUID(), caller.environmentId, PCK, connectionId, variant],
    );
    await db.query(
      `INSERT INTO orchestrator.sync_runs (id, sync_id, status, type, workflow_id, attempts)
       VALUES ($1, $2, $3, 'INCREMENTAL', 'sync-records-e2e', 1)`,
      [runId, sync.rows[0]!.id, status],
    );
  };

  const gateway = async (
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) => {
    const res = await fetch(`${stack.gatewayUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${stack.secretKey}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as Record<string, any>) : undefined };
  };

  /** One sync run as the orchestrator asks for it; the step comes from the connection's metadata. */
  const runSync = async (
    metadata: { step: string; count?: number; version?: number; pad?: number },
    options: {
      variant?: string;
      lastSyncDate?: string | null;
      connectionId?: string;
      /** The run's status as recorded: `STOPPED` for a run a full resync cancelled. */
      status?: string;
      /** Another sync bundle than the CLI-built fixture. */
      code?: string;
    } = {},
  ): Promise<FunctionRunResult> => {
    const connectionId = options.connectionId ?? 'conn-a';
    const runId = randomUUID();
    await recordRun(runId, connectionId, options.variant ?? 'base', options.status ?? 'RUNNING');
    const set = await gateway('POST', '/connections/metadata', {
      connection_id: connectionId,
      provider_config_key: PCK,
      metadata,
    });
    expect(set.status).toBe(201);
    const request: FunctionRunRequest = {
      caller,
      invocationId: runId,
      function: {
        id: 'fn-contacts',
        name: 'contacts',
        type: 'sync',
        version: '0.1.0',
        codeSha256: createHash('sha256')
          .update(options.code ?? SYNC_BUNDLE)
          .digest('hex'),
        code: options.code ?? SYNC_BUNDLE,
      },
      connection: { connectionId, providerConfigKey: PCK, provider: 'fake-pages' },
      variant: options.variant ?? 'base',
      sync: {
        syncId: 'sync-contacts',
        lastSyncDate: options.lastSyncDate ?? null,
        models: ['Contact', 'Note'],
        trackDeletes: false,
        mode: 'incremental',
      },
      attempt: 1,
      depth: 0,
      limits: {},
    };
    const reply = await nats.call(FUNCTIONS_REQUESTS.run, request, { timeoutMs: 120_000 });
    return functionRunResultSchema.parse(reply);
  };

  /** Every record of a model, page by page with the client's cursors. */
  const listAll = async (
    query: { model: string; variant?: string; modifiedAfter?: string; filter?: string },
    limit: number,
  ) => {
    const pages: ListedRecord[][] = [];
    let cursor: string | null | undefined;
    do {
      const page = await nango.listRecords<ListedRecord>({
        providerConfigKey: PCK,
        connectionId: 'conn-a',
        ...query,
        limit,
        ...(cursor ? { cursor } : {}),
      } as Parameters<Nango['listRecords']>[0]);
      pages.push(page.records as ListedRecord[]);
      cursor = page.next_cursor;
    } while (cursor);
    return pages;
  };

  beforeAll(async () => {
    stack = await startStack({
      env: { SWITCHBOARD_PROVIDERS_FILE: writePagesProvidersFile() },
      readyTimeoutMs: 240_000,
    });
    nc = await connect({ servers: stack.natsUrl });
    nats = new NatsRequester(nc);
    caller = await environmentCaller(nats, { uuid: stack.environmentUuid });
    nango = new Nango({ secretKey: stack.secretKey, host: stack.gatewayUrl });
    db = new Client({ connectionString: stack.databaseUrl });
    await db.connect();
    expect(
      (
        await gateway('POST', '/integrations', {
          provider: 'fake-pages',
          unique_key: PCK,
          credentials: { type: 'OAUTH2', client_id: 'cid', client_secret: 'csecret' },
        })
      ).status,
    ).toBe(200);
    for (const connectionId of ['conn-a', 'conn-b']) {
      const imported = await gateway('POST', '/connections', {
        provider_config_key: PCK,
        connection_id: connectionId,
        credentials: { type: 'OAUTH2', access_token: `at-${connectionId}` },
        connection_config: { origin: 'http://127.0.0.1:9' },
      });
      expect([200, 201]).toContain(imported.status);
    }
  }, 300_000);

  afterAll(async () => {
    await nc?.drain().catch(() => undefined);
    await db?.end().catch(() => undefined);
    await stack?.stop();
  }, 60_000);

  it('saves more than one chunk of records in a run and pages through them with cursors', async () => {
    const saved = await runSync({ step: 'save', count: 1250 });
    expect(saved).toMatchObject({ status: 'success' });

    const pages = await listAll({ model: 'Contact' }, 500);
    expect(pages.map((p) => p.length)).toEqual([500, 500, 250]);
    const records = pages.flat();
    expect(new Set(records.map((r) => r.id)).size).toBe(1250);
    const c7 = records.find((r) => r.id === 'c-7')!;
    expect(c7).toMatchObject({ name: 'contact 7', version: 1, _nango_metadata: { last_action: 'ADDED' } });
    expect(c7._nango_metadata.last_modified_at).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?\+00:00$/,
    );

    const notes = await nango.listRecords({ providerConfigKey: PCK, connectionId: 'conn-a', model: 'Note' });
    expect(notes.records.map((r) => r.id)).toEqual(['n-1']);
    // Another connection of the same integration sees none of them.
    const other = await nango.listRecords({
      providerConfigKey: PCK,
      connectionId: 'conn-b',
      model: 'Contact',
    });
    expect(other).toEqual({ records: [], next_cursor: null });
  });

  it('updates and deletes records; modifiedAfter returns only those, filter=deleted the deleted ones', async () => {
    // Same data again: nothing changes, so none of it shows up as modified after `before`.
    const before = new Date().toISOString();
    expect(await runSync({ step: 'save', count: 1250 })).toMatchObject({ status: 'success' });
    const lastSyncDate = new Date(Date.now() - 60_000).toISOString();
    const changed = await runSync({ step: 'change' }, { lastSyncDate });
    expect(changed.status).toBe('success');
    const report = JSON.parse(changed.logs.at(-1)!.message) as Record<string, unknown>;
    expect(report).toEqual({
      found: ['c-1', 'c-2'],
      renamed: 'renamed by update',
      full: 'Contact',
      variant: 'base',
      lastSyncDate,
    });

    const since = (await listAll({ model: 'Contact', modifiedAfter: before }, 100)).flat();
    const byId = new Map(since.map((r) => [r.id, r]));
    expect([...byId.keys()].sort()).toEqual(['c-1', 'c-2', 'c-3']);
    expect(byId.get('c-1')).toMatchObject({
      name: 'renamed by update',
      version: 1,
      _nango_metadata: { last_action: 'UPDATED' },
    });
    expect(byId.get('c-2')!._nango_metadata).toMatchObject({ last_action: 'DELETED' });

    const deleted = (await listAll({ model: 'Contact', filter: 'deleted' }, 100)).flat();
    expect(deleted.map((r) => r.id).sort()).toEqual(['c-2', 'c-3']);
    for (const r of deleted) {
      expect(r._nango_metadata.deleted_at).toMatch(/\+00:00$/);
      expect(r.name).toBe(`contact ${r.id.slice(2)}`);
    }
  });

  it("keeps a variant's records apart (Model::variant)", async () => {
    expect(await runSync({ step: 'save', count: 3, version: 9 }, { variant: 'eu' })).toMatchObject({
      status: 'success',
    });
    const changed = await runSync({ step: 'change' }, { variant: 'eu' });
    expect(JSON.parse(changed.logs.at(-1)!.message)).toMatchObject({
      full: 'Contact::eu',
      variant: 'eu',
      lastSyncDate: null,
    });

    const eu = (await listAll({ model: 'Contact', variant: 'eu' }, 100)).flat();
    expect(eu.map((r) => r.id).sort()).toEqual(['c-0', 'c-1', 'c-2']);
    expect(eu.find((r) => r.id === 'c-0')?.version).toBe(9);
    expect((await listAll({ model: 'Contact' }, 10_000)).flat()).toHaveLength(1250);
  });

  it('track deletes: what a full run did not see is deleted, and comes back if seen again', async () => {
    const run = await runSync({ step: 'track', count: 1000 });
    expect(run.status).toBe('success');
    expect(run.logs.at(-1)!.message).toBe('deleted 250');
    const deleted = (await listAll({ model: 'Contact', filter: 'deleted' }, 10_000)).flat();
    expect(deleted).toHaveLength(250);
    expect(deleted.every((r) => Number(r.id.slice(2)) >= 1000)).toBe(true);
  });

  it('stores a record as JSON.stringify in the script makes it, sent as data or as JSON text', async () => {
    // The first batch is plain data (the host gets a structured copy), the second holds a class with
    // toJSON and a Map (it goes as JSON text): both must read back as JSON.stringify gives them.
    const code = `"use strict";
      module.exports = { default: { type: "sync", exec: async (nango) => {
        class Money { constructor(cents) { this.cents = cents; } toJSON() { return (this.cents / 100).toFixed(2) + " EUR"; } }
        const plain = [{ id: "odd-1", at: new Date(Date.UTC(2026, 0, 2)), skipped: undefined, nan: NaN, list: [1, , 3], n: { deep: [null] } }];
        const classy = [{ id: 42, price: new Money(250), tags: new Map([["a", 1]]), drop() {} }];
        await nango.batchSave(plain, "Note");
        await nango.batchSave(classy, "Note");
        return JSON.stringify([...plain, ...classy]);
      } } };`;
    const run = await runSync({ step: 'none' }, { variant: 'shapes', code });
    expect(run.status).toBe('success');
    const page = await nango.listRecords<Record<string, unknown>>({
      providerConfigKey: PCK,
      connectionId: 'conn-a',
      model: 'Note',
      variant: 'shapes',
    } as Parameters<Nango['listRecords']>[0]);
    const stored = page.records.map(({ _nango_metadata: _metadata, ...record }) => record);
    // The id comes back as the record's external id, a string; the rest as the script's JSON.
    expect(stored).toEqual([
      { id: 'odd-1', at: '2026-01-02T00:00:00.000Z', nan: null, list: [1, null, 3], n: { deep: [null] } },
      { id: '42', price: '2.50 EUR', tags: {} },
    ]);
  });

  it('setMergingStrategy ignore_if_modified_after leaves what another run wrote meanwhile; deleteRecordsFromPreviousExecutions deletes what this run did not save', async () => {
    const variant = 'merging';
    const notes = async () =>
      new Map(
        (await listAll({ model: 'Note', variant }, 100))
          .flat()
          .map((r) => [r.id, (r as ListedRecord & { text?: string }).text]),
      );
    // Saves three notes, switches to ignore_if_modified_after, says so with a note of its own, waits until
    // another run has rewritten m-2, then saves all three again and m-1 once more.
    const merging = `"use strict";
      module.exports = { default: { type: "sync", exec: async (nango) => {
        const save = (ids, text) => nango.batchSave(ids.map((id) => ({ id, text })), "Note");
        await save(["m-1", "m-2", "m-3"], "first");
        await nango.setMergingStrategy({ strategy: "ignore_if_modified_after" }, "Note");
        await save(["ready"], "merging from here");
        for (let i = 0; ; i++) {
          const seen = await nango.getRecordsByIds(["m-2"], "Note");
          if (seen.get("m-2").text === "from another run") break;
          if (i === 20000) throw new Error("the other run never wrote m-2");
        }
        await save(["m-1", "m-2", "m-3"], "second");
        await save(["m-1"], "third");
      } } };`;
    const other = `"use strict";
      module.exports = { default: { type: "sync", exec: async (nango) => {
        await nango.batchSave([{ id: "m-2", text: "from another run" }], "Note");
      } } };`;
    const first = runSync({ step: 'none' }, { variant, code: merging });
    const deadline = Date.now() + 60_000;
    while (!(await notes()).has('ready')) {
      if (Date.now() > deadline)
        throw new Error(`the merging run never got ready: ${JSON.stringify(await first)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect((await runSync({ step: 'none' }, { variant, code: other })).status).toBe('success');
    expect((await first).status).toBe('success');
    // m-2 keeps the other run's write; the run's own writes (m-1 twice) still went in.
    expect(Object.fromEntries(await notes())).toEqual({
      'm-1': 'third',
      'm-2': 'from another run',
      'm-3': 'second',
      ready: 'merging from here',
    });

    const cleanup = `"use strict";
      module.exports = { default: { type: "sync", exec: async (nango) => {
        await nango.batchSave([{ id: "m-1", text: "kept" }], "Note");
        const { deletedKeys } = await nango.deleteRecordsFromPreviousExecutions("Note");
        return [...deletedKeys].sort();
      } } };`;
    const cleaned = await runSync({ step: 'none' }, { variant, code: cleanup });
    expect(cleaned).toMatchObject({ status: 'success', output: ['m-2', 'm-3', 'ready'] });
    const deleted = (await listAll({ model: 'Note', variant, filter: 'deleted' }, 100)).flat();
    expect(deleted.map((r) => r.id).sort()).toEqual(['m-2', 'm-3', 'ready']);
    expect((await notes()).get('m-1')).toBe('kept');
  });

  it('trackDeletesStart/End over a checkpointed full refresh of two runs: what the failed first run saved is kept', async () => {
    const variant = 'windowed';
    const earlier = `"use strict";
      module.exports = { default: { type: "sync", exec: async (nango) => {
        await nango.batchSave([{ id: "w-old", text: "gone at the provider since" }], "Note");
      } } };`;
    expect((await runSync({ step: 'none' }, { variant, code: earlier })).status).toBe('success');
    // Each run opens (or joins) the window; the first saves its page and fails, the second saves the rest
    // and ends the window, as Nango's guide for a full refresh over several executions says.
    const refresh = `"use strict";
      module.exports = { default: { type: "sync", exec: async (nango) => {
        const { step } = await nango.getMetadata();
        await nango.trackDeletesStart("Note");
        if (step === "page-1") {
          await nango.batchSave([{ id: "w-1", text: "page 1" }, { id: "w-2", text: "page 1" }], "Note");
          throw new Error("the provider went away after page 1");
        }
        await nango.batchSave([{ id: "w-3", text: "page 2" }], "Note");
        const { deletedKeys } = await nango.trackDeletesEnd("Note");
        return [...deletedKeys].sort();
      } } };`;
    expect((await runSync({ step: 'page-1' }, { variant, code: refresh })).status).toBe('failure');
    expect(await runSync({ step: 'page-2' }, { variant, code: refresh })).toMatchObject({
      status: 'success',
      output: ['w-old'],
    });
    const live = (await listAll({ model: 'Note', variant, filter: 'added,updated' }, 100)).flat();
    expect(live.map((r) => r.id).sort()).toEqual(['w-1', 'w-2', 'w-3']);
    const deleted = (await listAll({ model: 'Note', variant, filter: 'deleted' }, 100)).flat();
    expect(deleted.map((r) => r.id)).toEqual(['w-old']);
  });

  it('refuses a model the sync did not declare and records without an id; nothing is stored', async () => {
    const other = await runSync({ step: 'other-model' });
    expect(other).toMatchObject({ status: 'failure', error: { code: 'script_forbidden_call' } });
    if (other.status === 'failure')
      expect(other.error.message).toContain('"Secret" is not a model of this sync');

    const nameless = await runSync({ step: 'no-id' });
    expect(nameless).toMatchObject({ status: 'failure', error: { code: 'script_runtime_error' } });
    if (nameless.status === 'failure')
      expect(nameless.error.message).toMatch(/record 0 of model "Contact" has no id/);

    const secret = await gateway('GET', '/records?model=Secret', undefined, {
      'connection-id': 'conn-a',
      'provider-config-key': PCK,
    });
    expect(secret).toEqual({ status: 200, body: { records: [], next_cursor: null } });
  });

  it('a run that is over writes nothing: its first write is refused, which ends the script', async () => {
    const stale = await runSync(
      { step: 'save', count: 3, version: 5 },
      { connectionId: 'conn-b', status: 'STOPPED' },
    );
    expect(stale).toMatchObject({
      status: 'failure',
      error: { code: 'script_aborted', message: expect.stringContaining('sync_run_superseded') },
    });
    const stored = await gateway('GET', '/records?model=Contact', undefined, {
      'connection-id': 'conn-b',
      'provider-config-key': PCK,
    });
    expect(stored).toEqual({ status: 200, body: { records: [], next_cursor: null } });
  });

  it('answers bad requests as Nango does', async () => {
    const headers = { 'connection-id': 'conn-a', 'provider-config-key': PCK };
    const unknown = await gateway('GET', '/records/?model=Contact', undefined, {
      ...headers,
      'connection-id': 'nobody',
    });
    expect(unknown).toEqual({
      status: 400,
      body: {
        error: {
          code: 'unknown_connection',
          message: 'Provided ConnectionId and ProviderConfigKey does not match a valid connection',
        },
      },
    });
    expect((await gateway('GET', '/records?model=Contact')).body?.error.code).toBe('invalid_headers');
    for (const query of [
      'model=contact',
      'model=Contact&limit=0',
      'model=Contact&limit=10001',
      'model=Contact&filter=gone',
      'model=Contact&modified_after=2001-01-01T00:00:00Z',
      'model=Contact&extra=1',
    ]) {
      const res = await gateway('GET', `/records?${query}`, undefined, headers);
      expect([query, res.status, res.body?.error.code]).toEqual([query, 400, 'invalid_query_params']);
    }
    const badCursor = await gateway('GET', '/records?model=Contact&cursor=bm9wZQ', undefined, headers);
    expect(badCursor).toEqual({
      status: 400,
      body: { error: { code: 'invalid_cursor', message: expect.stringContaining('cursor') } },
    });
  });

  it('prunes payloads up to a cursor with pruneRecords', async () => {
    const [first] = await listAll({ model: 'Contact', variant: 'eu' }, 100);
    const until = String(first![1]!._nango_metadata.cursor);
    const pruned = await nango.pruneRecords({
      providerConfigKey: PCK,
      connectionId: 'conn-a',
      model: 'Contact',
      variant: 'eu',
      untilCursor: until,
    } as Parameters<Nango['pruneRecords']>[0]);
    expect(pruned).toEqual({ count: 2, has_more: false });
    const after = (await listAll({ model: 'Contact', variant: 'eu' }, 100)).flat();
    expect(after.slice(0, 2).map((r) => [r.name, r._nango_metadata.pruned_at !== null])).toEqual([
      [undefined, true],
      [undefined, true],
    ]);
    expect(after[2]!.name).toBeDefined();
  });
  it('answers a page larger than one NATS message whole and in order (the gateway joins the messages)', async () => {
    // 48 records of 100 KB: more than the orchestrator puts in one reply (recordsMessageBytes, at most 4 MiB).
    const saved = await runSync({ step: 'save', count: 48, pad: 100_000 }, { connectionId: 'conn-b' });
    expect(saved).toMatchObject({ status: 'success' });
    const list = (limit: number, cursor?: string | null) =>
      nango.listRecords<ListedRecord>({
        providerConfigKey: PCK,
        connectionId: 'conn-b',
        model: 'Contact',
        limit,
        ...(cursor ? { cursor } : {}),
      });
    const whole = await list(100);
    expect(whole.next_cursor).toBeNull();
    expect(whole.records).toHaveLength(48);
    for (const r of whole.records as ListedRecord[]) {
      expect(r.pad).toHaveLength(100_000);
      expect(r.pad!.startsWith(`${r.id.slice(2)}:`)).toBe(true);
    }
    // The same records, in the same order, as small pages give them.
    const small: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { records: ListedRecord[]; next_cursor: string | null } = await list(10, cursor);
      small.push(...page.records.map((r) => r.id));
      cursor = page.next_cursor;
    } while (cursor);
    expect(whole.records.map((r) => r.id)).toEqual(small);
    expect(new Set(small).size).toBe(48);
  }, 120_000);
});
