import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Nango } from '@nangohq/node';
import type { Stack } from '@switchboard/testing';
import { type Client, ScheduleNotFoundError } from '@temporalio/client';
import { Client as PgClient } from 'pg';
import { Webhook } from 'standardwebhooks';
import { call, createKey, expectError } from './support/http';
import { nangoDeploy } from './support/nango-cli';
import { START_HOOK_TIMEOUT_MS } from './support/processes';
import { standardStack } from './support/standard-stack';
import type { ContactsProvider } from './support/syncs-fakes';
import { openScriptRunner } from './support/script-runs';
import {
  CONN_A,
  CONN_B,
  INITIAL,
  KEY,
  recordRows,
  SYNC,
  SyncsSuite,
  variantRows,
} from './support/syncs-suite';
import { headerRecord } from './support/webhook-receiver';

jest.setTimeout(240_000);

// Deploys, records, the sync API and its errors on the worker's standard stack (syncs-recovery.e2e-spec.ts
// has the runs that are cut short, and the services stopped and killed, on a stack of its own).
describe('syncs on Temporal: schedules, control, records and the sync webhook', () => {
  const suite = new SyncsSuite();
  let stack: Stack;
  let provider: ContactsProvider;
  let nango: Nango;
  let temporal: Client;
  let project: string;
  let signingKey: string;
  const {
    status,
    statusOf,
    waitForRun,
    allRecords,
    waitForHooks,
    schedule,
    waitForQuiet,
    importWithSchedule,
    api,
    records,
  } = suite;

  beforeAll(async () => {
    await suite.start(() => standardStack());
    ({ stack, provider, nango, temporal, project, signingKey } = suite);
  }, 2 * START_HOOK_TIMEOUT_MS);

  afterAll(() => suite.stop());

  it('deploys with the nango CLI: a running Temporal schedule per connection, and a first run at once', async () => {
    const run = await nangoDeploy(project, stack.gatewayUrl, stack.secretKey);
    expect({ code: run.code, stdout: run.stdout }).toEqual({
      code: 0,
      stdout: expect.stringContaining('Successfully deployed the functions'),
    });

    const items = await status(CONN_A, '*');
    expect(items).toHaveLength(1);
    const all = await statusOf('*');
    expect(all.map((s) => s.connection_id).sort()).toEqual([CONN_A, CONN_B]);
    for (const item of all) {
      const described = await schedule(item.id);
      expect(described.state.paused).toBe(false);
      expect(described.spec.intervals).toEqual([expect.objectContaining({ every: 3_600_000 })]);
      expect(described.policies.overlap).toBe('SKIP');
      expect(described.action).toMatchObject({ type: 'startWorkflow', workflowType: 'syncWorkflow' });
    }

    const done = await waitForRun(CONN_A, null);
    expect(done).toMatchObject({
      connection_id: CONN_A,
      name: SYNC,
      variant: 'base',
      status: 'SUCCESS',
      type: 'INCREMENTAL',
      frequency: 'every hour',
      latestResult: { Contact: { added: INITIAL, updated: 0, deleted: 0 } },
      latestExecutionStatus: 'SUCCESS',
      recordCount: { Contact: INITIAL },
      checkpoint: null,
    });
    const next = new Date(done.nextScheduledSyncAt!).getTime();
    expect(next).toBeGreaterThan(Date.now());
    expect(next).toBeLessThanOrEqual(Date.now() + 3_600_000);
    await waitForRun(CONN_B, null);
  });

  it('sends the signed sync webhook with the run counts', async () => {
    const [first] = await waitForHooks((b) => b.connectionId === CONN_A);
    expect(first!.body).toEqual({
      from: 'nango',
      type: 'sync',
      connectionId: CONN_A,
      providerConfigKey: KEY,
      syncName: SYNC,
      syncVariant: 'base',
      model: 'Contact',
      syncType: 'INITIAL',
      success: true,
      modifiedAfter: expect.any(String),
      queryTimeStamp: first!.body.modifiedAfter,
      responseResults: { added: INITIAL, updated: 0, deleted: 0 },
      checkpoints: { from: null, to: null },
    });
    const headers = headerRecord(first!.hook.headers);
    expect(() => new Webhook(signingKey).verify(first!.hook.body, headers)).not.toThrow();
    expect(
      new Nango({ secretKey: stack.secretKey, webhookSigningKey: signingKey }).verifyIncomingWebhookRequest(
        first!.hook.body,
        headers,
      ),
    ).toBe(true);
  });

  it('pages through every record with cursors, in order, without repeats', async () => {
    const { records, pages } = await allRecords(CONN_A);
    expect(pages).toBe(Math.ceil(INITIAL / 1000));
    expect(records).toHaveLength(INITIAL);
    expect(new Set(records.map((r) => r.id)).size).toBe(INITIAL);
    expect(records[0]).toMatchObject({ id: expect.any(String), name: expect.any(String), revision: 1 });
    expect(records.every((r) => r._nango_metadata.last_action === 'ADDED')).toBe(true);
  });

  it('reads chosen records by id (ids, repeated or once), and refuses more than 100', async () => {
    const byIds = (ids: string[]) =>
      nango.listRecords({ providerConfigKey: KEY, connectionId: CONN_A, model: 'Contact', ids });
    const some = await byIds(['c-7', 'c-2999', 'nope']);
    expect(some.records.map((r) => r.id).sort()).toEqual(['c-2999', 'c-7']);
    expect(some.next_cursor).toBeNull();
    expect((await byIds(['c-42'])).records).toEqual([
      expect.objectContaining({ id: 'c-42', name: 'Contact 42', revision: 1 }),
    ]);
    const tooMany = Array.from({ length: 101 }, (_, i) => `c-${i}`);
    const query = tooMany.map((id) => `ids=${id}`).join('&');
    expectError(await records(CONN_A, `&${query}`), 400, 'invalid_query_params');
  });

  it('a page with a record that no longer decrypts answers server_error, never a short page', async () => {
    // A record whose sealed payload is another record's (it no longer decrypts under its own id), at the
    // 100th and then at the 700th place of a 1000-record page.
    const db = new PgClient({ connectionString: stack.databaseUrl });
    await db.connect();
    const rows = recordRows(db, stack, CONN_A);
    const donor = await rows.at(0);
    const page = () => records(CONN_A, '&limit=1000');
    try {
      for (const offset of [99, 699]) {
        const victim = await rows.at(offset);
        await rows.setPayload(victim.id, donor.payload);
        try {
          expectError(await page(), 500, 'server_error');
        } finally {
          await rows.setPayload(victim.id, victim.payload);
        }
      }
      // Whole again.
      const whole = await page();
      expect(whole.status).toBe(200);
      expect((whole.body as { records: unknown[] }).records).toHaveLength(1000);
    } finally {
      await db.end();
    }
  });

  it('a triggered run saves what changed: counts, modifiedAfter, deletes with filter=deleted', async () => {
    const before = (await status(CONN_A))[0]!.finishedAt;
    const changed = provider.change(100, 10);
    const removed = provider.remove(50);
    const added = provider.add(20, 'n');

    const res = await api('POST', '/sync/trigger', {
      syncs: [SYNC],
      provider_config_key: KEY,
      connection_id: CONN_A,
    });
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { success: true } });
    const done = await waitForRun(CONN_A, before);
    expect(done.latestResult).toEqual({ Contact: { added: 20, updated: 100, deleted: 50 } });
    expect(done.recordCount).toEqual({ Contact: INITIAL - 50 + 20 });

    const [hook] = await waitForHooks(
      (b) => b.connectionId === CONN_A && b.syncType === 'INCREMENTAL' && b.responseResults.deleted === 50,
    );
    expect(hook!.body.responseResults).toEqual({ added: 20, updated: 100, deleted: 50 });

    const modified = await allRecords(CONN_A, { modifiedAfter: hook!.body.modifiedAfter });
    expect(modified.records.map((r) => r.id).sort()).toEqual([...changed, ...removed, ...added].sort());
    const deleted = await allRecords(CONN_A, { filter: 'deleted' });
    expect(deleted.records.map((r) => r.id).sort()).toEqual([...removed].sort());
    expect(deleted.records.every((r) => r._nango_metadata.deleted_at !== null)).toBe(true);
    const updated = await allRecords(CONN_A, { filter: 'updated' });
    expect(updated.records.map((r) => r.id).sort()).toEqual([...changed].sort());
    expect(updated.records.every((r) => r.revision === 2)).toBe(true);
  });

  it('pauses and starts: the schedule stops, status says PAUSED, start runs it again', async () => {
    const [item] = await status(CONN_A);
    await nango.pauseSync(KEY, [SYNC], CONN_A);
    expect((await schedule(item!.id)).state.paused).toBe(true);
    const paused = (await status(CONN_A))[0]!;
    expect(paused).toMatchObject({ status: 'PAUSED', nextScheduledSyncAt: null });
    // The other connection's schedule is untouched.
    expect((await status(CONN_B))[0]!.status).toBe('SUCCESS');

    await nango.startSync(KEY, [SYNC], CONN_A);
    expect((await schedule(item!.id)).state.paused).toBe(false);
    const ran = await waitForRun(CONN_A, paused.finishedAt);
    expect(ran.status).toBe('SUCCESS');
    expect(ran.latestResult).toEqual({ Contact: { added: 0, updated: 0, deleted: 0 } });
  });

  it('overrides the frequency per connection, reverts with null, and refuses what Nango refuses', async () => {
    const [item] = await status(CONN_A);
    expect(await nango.updateSyncConnectionFrequency(KEY, SYNC, CONN_A, 'every 2 hours')).toEqual({
      frequency: '2 hours',
    });
    expect((await schedule(item!.id)).spec.intervals).toEqual([
      expect.objectContaining({ every: 7_200_000 }),
    ]);
    expect((await status(CONN_A))[0]!.frequency).toBe('every 2 hours');
    expect((await schedule((await status(CONN_B))[0]!.id)).spec.intervals).toEqual([
      expect.objectContaining({ every: 3_600_000 }),
    ]);
    expect(await nango.updateSyncConnectionFrequency(KEY, SYNC, CONN_A, 'every half hour')).toEqual({
      frequency: '30m',
    });
    expect(await nango.updateSyncConnectionFrequency(KEY, SYNC, CONN_A, null)).toEqual({
      frequency: 'every hour',
    });
    expect((await schedule(item!.id)).spec.intervals).toEqual([
      expect.objectContaining({ every: 3_600_000 }),
    ]);

    const put = (body: unknown) => api('PUT', '/sync/update-connection-frequency', body);
    const base = { sync_name: SYNC, provider_config_key: KEY, connection_id: CONN_A };
    expect(expectError(await put({ ...base, frequency: 'every 10s' }), 400, 'invalid_body').message).toBe(
      'Sync interval is invalid',
    );
    expectError(await put({ ...base, frequency: 'sometimes' }), 400, 'invalid_body');
    expectError(await put({ ...base, sync_name: 'nope', frequency: '1h' }), 400, 'unknown_sync');
    expectError(await put({ ...base, connection_id: 'nobody', frequency: '1h' }), 400, 'unknown_connection');
  });

  it('creates a variant (scheduled and run at once, records of its own), at most 100 a sync even under concurrent requests, and deletes it', async () => {
    const created = await nango.createSyncVariant({
      provider_config_key: KEY,
      connection_id: CONN_A,
      name: SYNC,
      variant: 'eu',
    });
    expect(created).toEqual({ id: expect.any(String), name: SYNC, variant: 'eu' });
    expect((await schedule(created.id)).state.paused).toBe(false);
    const done = await waitForRun(CONN_A, null, `${SYNC}::eu`);
    expect(done).toMatchObject({ variant: 'eu', latestResult: { Contact: { added: INITIAL - 30 } } });
    const variantRecords = await nango.listRecords({
      providerConfigKey: KEY,
      connectionId: CONN_A,
      model: 'Contact',
      variant: 'eu',
      limit: 10,
    });
    expect(variantRecords.records).toHaveLength(10);
    expect((await status(CONN_A, '*')).map((s) => s.variant).sort()).toEqual(['base', 'eu']);

    // `name::variant` triggers that variant alone.
    const fromPage = provider.pages.length;
    await nango.triggerSync(KEY, [`${SYNC}::eu`], CONN_A);
    await waitForRun(CONN_A, done.finishedAt, `${SYNC}::eu`);
    await waitForQuiet();
    expect(new Set(provider.pages.slice(fromPage).map((p) => `${p.connection}/${p.variant}`))).toEqual(
      new Set([`${CONN_A}/eu`]),
    );

    const post = (variant: string) =>
      api('POST', `/sync/${SYNC}/variant/${variant}`, { provider_config_key: KEY, connection_id: CONN_A });
    expectError(await post('base'), 400, 'invalid_variant');
    expectError(await post('eu'), 400, 'sync_variant_already_exists');
    expectError(
      await api('POST', `/sync/nope/variant/x`, { provider_config_key: KEY, connection_id: CONN_A }),
      400,
      'unknown_sync',
    );
    // At most 100 variants of a sync on a connection, base included, even when asked for at once: with base
    // and eu, 97 more rows (as variants created earlier leave them; written here, not scheduled, so as not to
    // run 97 syncs) leave room for one; 24 concurrent requests get one variant and 23 refusals.
    const base = (await status(CONN_A))[0]!;
    const db = new PgClient({ connectionString: stack.databaseUrl });
    await db.connect();
    const variants = variantRows(db, base.id);
    try {
      expect(await variants.fill(97)).toBe(97);
      const raced = await Promise.all(Array.from({ length: 24 }, (_, i) => post(`race-${i}`)));
      const won = raced.filter((r) => r.status === 200);
      expect(won).toHaveLength(1);
      for (const lost of raced.filter((r) => r.status !== 200)) expectError(lost, 400, 'resource_capped');
      const winner = (won[0]!.body as { variant: string }).variant;
      expect(expectError(await post('one-more'), 400, 'resource_capped').message).toContain('100');
      const all = await variants.siblings();
      expect(all).toHaveLength(100);
      expect(all.filter((v) => v.startsWith('race-'))).toEqual([winner]);
      // The winner is a variant like any other: scheduled, run at once, then deleted here.
      await waitForRun(CONN_A, null, `${SYNC}::${winner}`);
      expect(
        await nango.deleteSyncVariant({
          provider_config_key: KEY,
          connection_id: CONN_A,
          name: SYNC,
          variant: winner,
        }),
      ).toEqual({ success: true });
    } finally {
      await variants.removeFilled();
      await db.end();
    }

    expect(
      await nango.deleteSyncVariant({
        provider_config_key: KEY,
        connection_id: CONN_A,
        name: SYNC,
        variant: 'eu',
      }),
    ).toEqual({ success: true });
    await expect(schedule(created.id)).rejects.toBeInstanceOf(ScheduleNotFoundError);
    expect((await status(CONN_A, '*')).map((s) => s.variant)).toEqual(['base']);
    // Deleting it again: the variant is not there (404), the connection is (400 when it is not).
    const del = (connection_id: string) =>
      api('DELETE', `/sync/${SYNC}/variant/eu`, { provider_config_key: KEY, connection_id });
    expectError(await del(CONN_A), 404, 'not_found');
    expectError(await del('nobody'), 400, 'unknown_connection');
    expectError(
      await api('POST', `/sync/${SYNC}/variant/eu`, { provider_config_key: KEY, connection_id: 'nobody' }),
      400,
      'unknown_connection',
    );
    expect((await status(CONN_A, '*')).map((s) => s.variant)).toEqual(['base']);
    const gone = await nango.listRecords({
      providerConfigKey: KEY,
      connectionId: CONN_A,
      model: 'Contact',
      variant: 'eu',
    });
    expect(gone.records).toEqual([]);
  });

  it('answers the sync API errors of Nango', async () => {
    expectError(
      await api('POST', '/sync/trigger', {
        syncs: ['nope'],
        provider_config_key: KEY,
        connection_id: CONN_A,
      }),
      400,
      'no_syncs_found',
    );
    expectError(await api('POST', '/sync/trigger', { syncs: [SYNC] }), 400, 'missing_provider_config_key');
    // An unknown connection: 404 on trigger, pause and start (Nango's error table).
    for (const command of ['trigger', 'pause', 'start']) {
      expectError(
        await api('POST', `/sync/${command}`, {
          syncs: [SYNC],
          provider_config_key: KEY,
          connection_id: 'nobody',
        }),
        404,
        'unknown_connection',
      );
    }
    expectError(
      await api('POST', '/sync/trigger', {
        syncs: [SYNC],
        provider_config_key: KEY,
        opts: { reset: true },
        sync_mode: 'full_refresh',
      }),
      400,
      'invalid_body',
    );
    const missing = await api('GET', `/sync/status?syncs=*&provider_config_key=${KEY}&connection_id=nobody`);
    expect(missing.status).toBe(400);
    expect(missing.body).toEqual({ error: { code: 'invalid_body', message: 'Connection not found' } });
    expectError(await api('GET', `/sync/status?syncs=*`), 400, 'invalid_query_params');
    // GET /records of an unknown connection: unknown_connection, even with a cursor the page read refuses.
    expectError(await records('nobody'), 400, 'unknown_connection');
    expectError(await records('nobody', '&cursor=not-a-cursor'), 400, 'unknown_connection');
    expectError(await records(CONN_A, '&cursor=not-a-cursor'), 400, 'invalid_cursor');
    // Headers instead of body fields.
    const beforeB = (await status(CONN_B))[0]!.finishedAt;
    const byHeaders = await call(stack.gatewayUrl, 'POST', '/sync/trigger', {
      key: stack.secretKey,
      headers: { 'provider-config-key': KEY, 'connection-id': CONN_B },
      body: { syncs: [{ name: SYNC, variant: 'base' }] },
    });
    expect({ status: byHeaders.status, body: byHeaders.body }).toEqual({
      status: 200,
      body: { success: true },
    });
    // The connection's first incremental run: what changed since its initial one.
    expect((await waitForRun(CONN_B, beforeB)).latestResult).toEqual({
      Contact: { added: 20, updated: 100, deleted: 50 },
    });
  });

  it('triggers the sync of every connection when no connection is named', async () => {
    const [a, b] = [(await status(CONN_A))[0]!.finishedAt, (await status(CONN_B))[0]!.finishedAt];
    const fromPage = provider.pages.length;
    await nango.triggerSync(KEY, [SYNC]);
    await Promise.all([waitForRun(CONN_A, a), waitForRun(CONN_B, b)]);
    await waitForQuiet();
    expect(new Set(provider.pages.slice(fromPage).map((p) => `${p.connection}/${p.variant}`))).toEqual(
      new Set([`${CONN_A}/base`, `${CONN_B}/base`]),
    );
  });

  it('a script controls syncs with nango.triggerSync and nango.startSync', async () => {
    // An action bundle run by functions-runtime as the orchestrator asks for one (FUNCTIONS_SUBJECTS.run).
    const scripts = await openScriptRunner(stack, {
      connectionId: CONN_A,
      providerConfigKey: KEY,
      provider: 'fake-api-key',
    });
    try {
      const before = (await status(CONN_A))[0]!.finishedAt;
      expect(
        await scripts.run(`await nango.triggerSync("${KEY}", "${CONN_A}", "${SYNC}"); return "triggered";`),
      ).toMatchObject({
        status: 'success',
        output: 'triggered',
      });
      await waitForRun(CONN_A, before);

      await nango.pauseSync(KEY, [SYNC], CONN_A);
      const paused = (await status(CONN_A))[0]!;
      expect(paused.status).toBe('PAUSED');
      expect(
        await scripts.run(`await nango.startSync("${KEY}", ["${SYNC}"], "${CONN_A}"); return "started";`),
      ).toMatchObject({
        status: 'success',
        output: 'started',
      });
      expect((await status(CONN_A))[0]!.status).not.toBe('PAUSED');
      // A start runs the sync at once: that run ends before the next test reads the sync's state.
      await waitForRun(CONN_A, paused.finishedAt);

      // A sync the environment does not have: the orchestrator's answer reaches the script as an error.
      expect(
        await scripts.run(
          `try { await nango.triggerSync("${KEY}", "${CONN_A}", "nope"); return "no error"; } catch (e) { return e.code; }`,
        ),
      ).toMatchObject({ status: 'success', output: 'no_syncs_found' });
    } finally {
      await scripts.close();
    }
  });

  it('enforces environment:syncs:read|update and environment:records:read|write, refusing without acting', async () => {
    const keyWith = (scope: string) => createKey(stack.gatewayUrl, stack.secretKey, [scope], scope);
    const syncsRead = await keyWith('environment:syncs:read');
    const syncsUpdate = await keyWith('environment:syncs:update');
    const recordsRead = await keyWith('environment:records:read');
    const recordsWrite = await keyWith('environment:records:write');
    const as = (key: string, method: string, path: string, body?: unknown) =>
      call(stack.gatewayUrl, method, path, {
        key,
        headers: { 'provider-config-key': KEY, 'connection-id': CONN_A },
        ...(body !== undefined ? { body } : {}),
      });
    const statusPath = `/sync/status?syncs=${SYNC}&provider_config_key=${KEY}&connection_id=${CONN_A}`;
    const command = { syncs: [SYNC], provider_config_key: KEY, connection_id: CONN_A };
    const { records: before } = await allRecords(CONN_A);
    const prune = { model: 'Contact', until_cursor: before.at(-1)!._nango_metadata.cursor };
    const pagesBefore = provider.pages.length;
    // A trigger starts its workflow, and a schedule fired by hand records an action, before it is answered.
    const [synced] = await status(CONN_A);
    const lastTrigger = async () =>
      (await temporal.workflow.getHandle(`sync-${synced!.id}-trigger`).describe()).runId;
    const scheduleActions = async () => (await schedule(synced!.id)).info.numActionsTaken;
    const [triggerBefore, actionsBefore] = [await lastTrigger(), await scheduleActions()];

    expect((await as(syncsRead, 'GET', statusPath)).status).toBe(200);
    for (const [method, path, body] of [
      ['POST', '/sync/trigger', command],
      ['POST', '/sync/pause', command],
      ['POST', '/sync/start', command],
      [
        'PUT',
        '/sync/update-connection-frequency',
        { sync_name: SYNC, provider_config_key: KEY, connection_id: CONN_A, frequency: '2h' },
      ],
      ['POST', `/sync/${SYNC}/variant/scoped`, { provider_config_key: KEY, connection_id: CONN_A }],
    ] as const) {
      const refused = expectError(await as(syncsRead, method, path, body), 403, 'forbidden');
      expect(refused.message).toContain('environment:syncs:update');
    }
    expect(expectError(await as(syncsUpdate, 'GET', statusPath), 403, 'forbidden').message).toContain(
      'environment:syncs:read',
    );
    for (const key of [syncsRead, syncsUpdate, recordsWrite]) {
      expect(expectError(await as(key, 'GET', '/records?model=Contact'), 403, 'forbidden').message).toContain(
        'environment:records:read',
      );
    }
    for (const key of [recordsRead, syncsUpdate]) {
      expect(
        expectError(await as(key, 'PATCH', '/records/prune', prune), 403, 'forbidden').message,
      ).toContain('environment:records:write');
    }
    expect((await as(recordsRead, 'GET', '/records?model=Contact&limit=1')).status).toBe(200);

    // Nothing the refused requests asked for happened: no run started (the trigger workflow and the schedule
    // are as they were, and a trigger starts its run before it answers), no variant, no pause, no pruned payload.
    expect({ trigger: await lastTrigger(), actions: await scheduleActions() }).toEqual({
      trigger: triggerBefore,
      actions: actionsBefore,
    });
    expect(provider.pages.length).toBe(pagesBefore);
    const [item] = await status(CONN_A, '*');
    expect(item).toMatchObject({ status: 'SUCCESS', frequency: 'every hour' });
    expect((await status(CONN_A, '*')).map((s) => s.variant)).toEqual(['base']);
    const { records: after } = await allRecords(CONN_A);
    expect(after).toHaveLength(before.length);
    expect(after.filter((r) => r._nango_metadata.pruned_at !== null)).toEqual([]);
  });

  it('refuses a deploy whose sync runs more often than every 30 seconds, storing nothing', async () => {
    const bundle = readFileSync(join(project, 'build', 'recordhub_syncs_contacts.cjs'), 'utf8');
    const res = await api('POST', '/sync/deploy', {
      flowConfigs: [
        {
          syncName: 'too-often',
          providerConfigKey: KEY,
          type: 'sync',
          models: ['Contact'],
          runs: 'every 10s',
          auto_start: true,
          fileBody: { js: bundle, ts: '// too often' },
        },
      ],
      deployMode: 'single',
      reconcile: false,
    });
    const error = expectError(res, 400, 'sync_interval_too_short');
    expect(error.message).toContain('30 seconds');
    expect((await nango.listFunctions({ uniqueKey: KEY })).data.map((f) => f.name)).toEqual([SYNC]);
  });

  it('a full resync with emptyCache (or sync_mode full_refresh_and_clear_cache) clears records, checkpoint and lastSyncDate, then fetches everything', async () => {
    const before = (await status(CONN_B))[0]!;
    await nango.triggerSync(KEY, [SYNC], CONN_B, { reset: true, emptyCache: true });
    const done = await waitForRun(CONN_B, before.finishedAt);
    const total = provider.contacts.length;
    expect(done.latestResult).toEqual({ Contact: { added: total, updated: 0, deleted: 0 } });
    expect(done.recordCount).toEqual({ Contact: total });
    const [hook] = await waitForHooks(
      (b) => b.connectionId === CONN_B && b.syncType === 'INITIAL' && b.modifiedAfter > before.finishedAt!,
    );
    expect(hook!.body.responseResults).toEqual({ added: total, updated: 0, deleted: 0 });
    expect((await allRecords(CONN_B, { filter: 'deleted' })).records).toEqual([]);

    // The same through `sync_mode` (the body newer clients send instead of `opts`).
    const res = await api('POST', '/sync/trigger', {
      syncs: [SYNC],
      provider_config_key: KEY,
      connection_id: CONN_B,
      sync_mode: 'full_refresh_and_clear_cache',
    });
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { success: true } });
    const again = await waitForRun(CONN_B, done.finishedAt);
    expect(again.latestResult).toEqual({ Contact: { added: total, updated: 0, deleted: 0 } });
    await waitForHooks(
      (b) => b.connectionId === CONN_B && b.syncType === 'INITIAL' && b.modifiedAfter > done.finishedAt!,
    );
  });

  it('a new connection gets its schedule when authorised; deleting it removes schedule and records', async () => {
    const item = await importWithSchedule('conn-c');
    await waitForRun('conn-c', null);
    const readOnce = () => records('conn-c', '&limit=1');
    // Read once: the orchestrator now knows the connection exists (and keeps that for a few seconds).
    expect((await readOnce()).status).toBe(200);

    await nango.deleteConnection(KEY, 'conn-c');
    await expect(schedule(item.id)).rejects.toBeInstanceOf(ScheduleNotFoundError);
    // The deletion's announcement dropped what it knew: the very next read is refused, not served.
    expectError(await readOnce(), 400, 'unknown_connection');
    expect((await statusOf('*')).map((s) => s.connection_id).sort()).toEqual([CONN_A, CONN_B]);
  });
});
