import { createHash, randomUUID } from 'node:crypto';
import { createServer, type Socket } from 'node:net';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Nango } from '@nangohq/node';
import {
  EVENT_CONSUMERS,
  EVENT_STREAM,
  FUNCTIONS_SUBJECTS,
  type SyncStatusItem,
} from '@switchboard/contracts';
import { startStack, type Stack } from '@switchboard/testing';
import { Client, Connection, ScheduleNotFoundError } from '@temporalio/client';
import { connect } from 'nats';
import { Client as PgClient } from 'pg';
import { Webhook } from 'standardwebhooks';
import { finishedRuns, runFailedSince } from './support/barriers';
import { call, createKey, expectError } from './support/http';
import { nangoDeploy, prepareProject } from './support/nango-cli';
import { START_HOOK_TIMEOUT_MS, STACK_READY_TIMEOUT_MS } from './support/processes';
import { writeProxyProvidersFile } from './support/proxy-fakes';
import { ContactsProvider, loopbackEgress, setUpRecordhub } from './support/syncs-fakes';
import { headerRecord, WebhookReceiver } from './support/webhook-receiver';

jest.setTimeout(240_000);

const API_KEY = 'recordhub-api-key';
const KEY = 'recordhub';
const CONN_A = 'conn-a';
const CONN_B = 'conn-b';
const SYNC = 'contacts';
const INITIAL = 3000;

interface NangoRecord {
  id: string;
  name: string;
  revision: number;
  _nango_metadata: {
    last_action: string;
    deleted_at: string | null;
    pruned_at: string | null;
    cursor: string;
  };
}
interface SyncWebhook {
  type: string;
  connectionId: string;
  providerConfigKey: string;
  syncName: string;
  syncVariant: string;
  model: string;
  syncType: string;
  success: boolean;
  modifiedAfter: string;
  queryTimeStamp: string;
  responseResults: { added: number; updated: number; deleted: number };
}

/** Repeats a request until it answers 200 (an orchestrator just started may not be subscribed yet). */
const waitForOk = async (request: () => Promise<{ status: number; body: unknown }>) => {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const res = await request();
    if (res.status === 200 || Date.now() > deadline) return res;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('syncs on Temporal: schedules, control, records and the sync webhook', () => {
  let stack: Stack;
  let provider: ContactsProvider;
  let receiver: WebhookReceiver;
  let nango: Nango;
  let temporal: Client;
  let temporalConnection: Connection;
  let project: string;
  let signingKey: string;

  const api = (method: string, path: string, body?: unknown) =>
    call(stack.gatewayUrl, method, path, { key: stack.secretKey, ...(body !== undefined ? { body } : {}) });

  // @nangohq/node's SyncStatus type lacks fields the server sends (connection_id, variant, ...).
  const statusOf = async (syncs: string[] | '*', connectionId?: string) =>
    (await nango.syncStatus(KEY, syncs, connectionId)).syncs as unknown as SyncStatusItem[];
  const status = (connectionId: string, syncs: string[] | '*' = [SYNC]) => statusOf(syncs, connectionId);

  /** Waits until the sync of the connection has finished a run after `after` (ISO), and answers its status. */
  const waitForRun = async (
    connectionId: string,
    after: string | null | undefined,
    name = SYNC,
    timeoutMs = 120_000,
  ) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const [item] = await status(connectionId, [name]);
      if (item && item.status !== 'RUNNING' && item.finishedAt && (!after || item.finishedAt > after)) {
        return item;
      }
      if (Date.now() > deadline) throw new Error(`no run of ${name} finished: ${JSON.stringify(item)}`);
      await sleep(300);
    }
  };

  const allRecords = async (connectionId: string, extra: Record<string, unknown> = {}) => {
    const records: NangoRecord[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: { records: NangoRecord[]; next_cursor: string | null } = (await nango.listRecords({
        providerConfigKey: KEY,
        connectionId,
        model: 'Contact',
        limit: 1000,
        ...(cursor ? { cursor } : {}),
        ...extra,
      })) as never;
      records.push(...page.records);
      cursor = page.next_cursor;
      pages += 1;
    } while (cursor);
    return { records, pages };
  };

  const syncHooks = () =>
    receiver.received
      .filter((h) => h.path === '/hooks')
      .map((h) => ({ hook: h, body: JSON.parse(h.body) as SyncWebhook }))
      .filter((h) => h.body.type === 'sync');

  const waitForHooks = async (predicate: (body: SyncWebhook) => boolean, count = 1) => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const found = syncHooks().filter((h) => predicate(h.body));
      if (found.length >= count) return found;
      if (Date.now() > deadline) {
        throw new Error(`sync webhooks missing: ${JSON.stringify(syncHooks().map((h) => h.body))}`);
      }
      await sleep(200);
    }
  };

  const schedule = (syncId: string) => temporal.schedule.getHandle(`sync-${syncId}`).describe();

  /** Waits until no page was asked for during a second (no run is fetching). */
  const waitForQuiet = async () => {
    const deadline = Date.now() + 30_000;
    for (let seen = -1; seen !== provider.pages.length; ) {
      if (Date.now() > deadline) throw new Error('the provider is still being paged');
      seen = provider.pages.length;
      await sleep(1000);
    }
  };

  /** The live records of CONN_A are the provider's contacts as they are now, exactly; none of them is deleted. */
  const expectProviderData = async () => {
    const { records } = await allRecords(CONN_A);
    const live = records.filter((r) => r._nango_metadata.deleted_at === null);
    const stored = new Map(live.map((r) => [r.id, { id: r.id, name: r.name, revision: r.revision }]));
    const differing = provider.contacts.filter((c) => {
      const mine = stored.get(c.id);
      return !mine || mine.name !== c.name || mine.revision !== c.revision;
    });
    expect({ live: live.length, differing: differing.map((c) => c.id) }).toEqual({
      live: provider.contacts.length,
      differing: [],
    });
  };

  /**
   * Releases a page held from a stopped (or fenced) script, whose run functions-runtime had not finished at
   * `runsBefore` (a count of `finishedRuns`): once that run has ended as a failure (stopped, or its late write
   * refused), its script asked for no more pages, and the records stay the provider's.
   */
  const expectNothingAfterRelease = async (held: { release(): void }, runsBefore: number) => {
    const released = provider.pages.length;
    held.release();
    await runFailedSince(stack, runsBefore);
    expect(provider.pages.slice(released)).toEqual([]);
    await expectProviderData();
  };

  beforeAll(async () => {
    [provider, receiver] = await Promise.all([
      new ContactsProvider(API_KEY, INITIAL).start(),
      new WebhookReceiver().start(),
    ]);
    stack = await startStack({
      env: { SWITCHBOARD_PROVIDERS_FILE: writeProxyProvidersFile() },
      // A killed worker's run is retried after this much silence (the kill test).
      serviceEnv: loopbackEgress({ 'sync-orchestrator': { SWITCHBOARD_SYNC_HEARTBEAT_TIMEOUT_MS: '5000' } }),
      // Seven services, the CLI's build and a first sync run share two cores with other suites.
      readyTimeoutMs: 2 * STACK_READY_TIMEOUT_MS,
    });
    temporalConnection = await Connection.connect({
      address: stack.envOf('sync-orchestrator').TEMPORAL_ADDRESS!,
    });
    temporal = new Client({ connection: temporalConnection });
    nango = new Nango({ secretKey: stack.secretKey, host: stack.gatewayUrl });
    signingKey = await setUpRecordhub(stack, provider, API_KEY, [CONN_A, CONN_B], `${receiver.url}/hooks`);
    project = prepareProject('syncs-project');
  }, 2 * START_HOOK_TIMEOUT_MS);

  afterAll(async () => {
    await stack?.stop();
    await temporalConnection?.close();
    await Promise.all([provider?.close(), receiver?.stop()]);
    if (project) rmSync(project, { recursive: true, force: true });
  });

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
    expectError(
      await call(stack.gatewayUrl, 'GET', `/records?model=Contact&${query}`, {
        key: stack.secretKey,
        headers: { 'provider-config-key': KEY, 'connection-id': CONN_A },
      }),
      400,
      'invalid_query_params',
    );
  });

  it('a page with a record that no longer decrypts answers server_error, never a short page', async () => {
    // A record whose sealed payload is another record's (it no longer decrypts under its own id), at the
    // 100th and then at the 700th place of a 1000-record page.
    const db = new PgClient({ connectionString: stack.databaseUrl });
    await db.connect();
    const rowAt = async (offset: number) =>
      (
        await db.query<{ id: string; payload: Buffer }>(
          `SELECT r.id::text, r.payload FROM orchestrator.records r
          JOIN auth.environments e ON e.id::text = r.environment_id::text
          WHERE e.uuid = $1 AND r.provider_config_key = $2 AND r.connection_id = $3 AND r.model = 'Contact'
          ORDER BY r.updated_at, r.id OFFSET $4 LIMIT 1`,
          [stack.environmentUuid, KEY, CONN_A, offset],
        )
      ).rows[0]!;
    const donor = await rowAt(0);
    const page = () =>
      call(stack.gatewayUrl, 'GET', '/records?model=Contact&limit=1000', {
        key: stack.secretKey,
        headers: { 'provider-config-key': KEY, 'connection-id': CONN_A },
      });
    try {
      for (const offset of [99, 699]) {
        const victim = await rowAt(offset);
        await db.query('UPDATE orchestrator.records SET payload = $2 WHERE id = $1::uuid', [
          victim.id,
          donor.payload,
        ]);
        try {
          expectError(await page(), 500, 'server_error');
        } finally {
          await db.query('UPDATE orchestrator.records SET payload = $2 WHERE id = $1::uuid', [
            victim.id,
            victim.payload,
          ]);
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
    const siblings = async () =>
      (
        await db.query<{ variant: string }>(
          `SELECT s.variant FROM orchestrator.syncs s
           JOIN orchestrator.syncs b USING (environment_id, provider_config_key, connection_id, name)
           WHERE b.id = $1`,
          [base.id],
        )
      ).rows.map((r) => r.variant);
    try {
      const filler = await db.query(
        `INSERT INTO orchestrator.syncs (id, environment_id, provider_config_key, connection_id, name, variant, updated_at)
         SELECT gen_random_uuid(), environment_id, provider_config_key, connection_id, name, 'cap-' || g, now()
         FROM orchestrator.syncs, generate_series(1, 97) AS g WHERE id = $1`,
        [base.id],
      );
      expect(filler.rowCount).toBe(97);
      const raced = await Promise.all(Array.from({ length: 24 }, (_, i) => post(`race-${i}`)));
      const won = raced.filter((r) => r.status === 200);
      expect(won).toHaveLength(1);
      for (const lost of raced.filter((r) => r.status !== 200)) expectError(lost, 400, 'resource_capped');
      const winner = (won[0]!.body as { variant: string }).variant;
      expect(expectError(await post('one-more'), 400, 'resource_capped').message).toContain('100');
      const all = await siblings();
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
      await db.query(
        `DELETE FROM orchestrator.syncs s USING orchestrator.syncs b
         WHERE b.id = $1 AND s.environment_id = b.environment_id AND s.provider_config_key = b.provider_config_key
           AND s.connection_id = b.connection_id AND s.name = b.name AND s.variant LIKE 'cap-%'`,
        [base.id],
      );
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
    const records = (connectionId: string, query = '') =>
      call(stack.gatewayUrl, 'GET', `/records?model=Contact${query}`, {
        key: stack.secretKey,
        headers: { 'provider-config-key': KEY, 'connection-id': connectionId },
      });
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
    const nc = await connect({ servers: stack.natsUrl });
    const db = new PgClient({ connectionString: stack.databaseUrl });
    await db.connect();
    try {
      const env = (
        await db.query<{ id: number; account_id: number; name: string }>(
          'SELECT id, account_id, name FROM auth.environments WHERE uuid = $1',
          [stack.environmentUuid],
        )
      ).rows[0]!;
      const runScript = async (body: string) => {
        const code = `"use strict"; module.exports = { default: { type: "action", exec: async (nango) => { ${body} } } };`;
        const request = {
          caller: {
            accountId: env.account_id,
            environmentId: env.id,
            environmentUuid: stack.environmentUuid,
            environmentName: env.name,
          },
          invocationId: randomUUID(),
          function: {
            id: 'fn-sync-control',
            name: 'sync-control',
            type: 'action',
            version: '0.0.1',
            codeSha256: createHash('sha256').update(code).digest('hex'),
            code,
          },
          connection: { connectionId: CONN_A, providerConfigKey: KEY, provider: 'fake-api-key' },
          input: {},
          attempt: 1,
          depth: 0,
          limits: {},
        };
        const msg = await nc.request(
          FUNCTIONS_SUBJECTS.run,
          JSON.stringify({ pattern: FUNCTIONS_SUBJECTS.run, id: randomUUID(), data: request }),
          { timeout: 60_000 },
        );
        return (JSON.parse(Buffer.from(msg.data).toString('utf8')) as { response: { data: unknown } })
          .response.data;
      };

      const before = (await status(CONN_A))[0]!.finishedAt;
      expect(
        await runScript(`await nango.triggerSync("${KEY}", "${CONN_A}", "${SYNC}"); return "triggered";`),
      ).toMatchObject({
        status: 'success',
        output: 'triggered',
      });
      await waitForRun(CONN_A, before);

      await nango.pauseSync(KEY, [SYNC], CONN_A);
      expect((await status(CONN_A))[0]!.status).toBe('PAUSED');
      expect(
        await runScript(`await nango.startSync("${KEY}", ["${SYNC}"], "${CONN_A}"); return "started";`),
      ).toMatchObject({
        status: 'success',
        output: 'started',
      });
      expect((await status(CONN_A))[0]!.status).not.toBe('PAUSED');
      await waitForQuiet();

      // A sync the environment does not have: the orchestrator's answer reaches the script as an error.
      expect(
        await runScript(
          `try { await nango.triggerSync("${KEY}", "${CONN_A}", "nope"); return "no error"; } catch (e) { return e.code; }`,
        ),
      ).toMatchObject({ status: 'success', output: 'no_syncs_found' });
    } finally {
      await nc.close();
      await db.end();
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

  // The workflow protocol behind these two tests (BUFFER_ONE, SKIP, a full resync cancelling the holder,
  // continue-as-new, cancellation) is tested on its own in apps/sync-orchestrator/src/workflows/
  // workflows.int-spec.ts; here a held provider page keeps a run in progress, so no run is slowed down.
  it('runs of one sync never overlap: a scheduled start during a triggered run is skipped, triggers meanwhile make one more run, a terminated run holds nothing', async () => {
    const [item] = await status(CONN_B);
    const triggered = temporal.workflow.getHandle(`sync-${item!.id}-trigger`);
    const total = provider.contacts.length;
    const oneRun = Array.from({ length: Math.ceil(total / provider.pageSize) }, (_, i) =>
      String(i * provider.pageSize),
    );
    // The run in progress waits for its third page until the test lets it go.
    let held = provider.hold(oneRun[2]!);
    try {
      const from = provider.pages.length;
      await nango.triggerSync(KEY, [SYNC], CONN_B);
      await held.requested;

      // The schedule comes due meanwhile (fired here by hand): its run is skipped, not run beside this one.
      const firedAt = Date.now();
      const scheduleHandle = temporal.schedule.getHandle(`sync-${item!.id}`);
      await scheduleHandle.trigger();
      let scheduledId: string | undefined;
      const fired = Date.now() + 10_000;
      while (!scheduledId && Date.now() < fired) {
        scheduledId = (await scheduleHandle.describe()).info.recentActions.find(
          (a) => a.takenAt.getTime() >= firedAt - 1000,
        )?.action.workflow.workflowId;
        if (!scheduledId) await sleep(100);
      }
      expect(await temporal.workflow.getHandle(scheduledId!).result()).toBe('skipped');

      // Two more triggers while it runs: one more run after it (Temporal's BUFFER_ONE), never beside it.
      await nango.triggerSync(KEY, [SYNC], CONN_B);
      await nango.triggerSync(KEY, [SYNC], CONN_B);
      held.release();
      expect(await triggered.result()).toBe('succeeded');
      expect(provider.pages.slice(from).map((p) => p.cursor)).toEqual([...oneRun, ...oneRun]);
      const ran = (await status(CONN_B))[0]!;
      expect(ran).toMatchObject({
        status: 'SUCCESS',
        latestResult: { Contact: { added: 0, updated: 0, deleted: 0 } },
        recordCount: { Contact: total },
      });

      // A run whose workflow is terminated (not cancelled: it cannot close its run) holds nothing.
      held = provider.hold(oneRun[2]!);
      await nango.triggerSync(KEY, [SYNC], CONN_B);
      await held.requested;
      const runsBefore = finishedRuns(stack).length;
      await triggered.terminate('the e2e test terminates it');
      const stopped = (await status(CONN_B))[0]!;
      // Its run could not close itself, yet it is not shown as still running; it left the checkpoint of
      // the pages it saved, short of the end.
      expect(stopped).toMatchObject({ status: 'ERROR', latestExecutionStatus: 'STOPPED' });
      const left = stopped.checkpoint as { cursor: string } | null;
      expect(left).toEqual({ cursor: expect.any(String) });
      const next = provider.pages.length;
      await nango.triggerSync(KEY, [SYNC], CONN_B);
      const done = await waitForRun(CONN_B, ran.finishedAt);
      // The next run closes the terminated one and resumes from its checkpoint; having seen only the
      // pages after it, it deletes nothing it did not see.
      expect(done).toMatchObject({
        status: 'SUCCESS',
        latestResult: { Contact: { added: 0, updated: 0, deleted: 0 } },
        recordCount: { Contact: total },
        checkpoint: null,
      });
      expect(provider.pages.slice(next).map((p) => p.cursor)).toEqual(
        oneRun.slice(oneRun.indexOf(left!.cursor)),
      );
      // The terminated run's script was stopped (its activity heard of the termination, or its lease ran
      // out; a late write of it would be refused): given its page now, it asks for no more until it ends.
      const released = provider.pages.length;
      held.release();
      await runFailedSince(stack, runsBefore);
      expect(provider.pages.slice(released)).toEqual([]);
    } finally {
      held.release();
    }
  });

  it('a full resync cancels a scheduled run in progress first, then runs', async () => {
    const [item] = await status(CONN_B);
    const held = provider.hold(String(2 * provider.pageSize));
    try {
      // A scheduled run in progress (the schedule fired here by hand), waiting for its third page.
      const firedAt = Date.now();
      const scheduleHandle = temporal.schedule.getHandle(`sync-${item!.id}`);
      await scheduleHandle.trigger();
      await held.requested;
      const scheduledId = (await scheduleHandle.describe()).info.recentActions.find(
        (a) => a.takenAt.getTime() >= firedAt - 1000,
      )?.action.workflow.workflowId;
      expect((await status(CONN_B))[0]!.status).toBe('RUNNING');

      await nango.triggerSync(KEY, [SYNC], CONN_B, { reset: true });
      const scheduled = temporal.workflow.getHandle(scheduledId!);
      await scheduled.result().catch(() => undefined);
      expect((await scheduled.describe()).status.name).toBe('CANCELLED');
      // The full resync ran once the cancelled run was closed.
      expect(await temporal.workflow.getHandle(`sync-${item!.id}-trigger`).result()).toBe('succeeded');
      expect((await status(CONN_B))[0]).toMatchObject({
        status: 'SUCCESS',
        latestExecutionStatus: 'SUCCESS',
        recordCount: { Contact: provider.contacts.length },
        checkpoint: null,
      });
    } finally {
      held.release();
    }
  });

  /** Imports a connection and waits for its sync to appear with a running schedule. */
  const importWithSchedule = async (connectionId: string): Promise<SyncStatusItem> => {
    const imported = await api('POST', '/connections', {
      provider_config_key: KEY,
      connection_id: connectionId,
      credentials: { type: 'API_KEY', apiKey: API_KEY },
      connection_config: { origin: provider.url, account: 'acme' },
    });
    expect([200, 201]).toContain(imported.status);
    const deadline = Date.now() + 30_000;
    let item: SyncStatusItem | undefined;
    while (!item && Date.now() < deadline) {
      item = (await statusOf([SYNC])).find((s) => s.connection_id === connectionId);
      if (!item) await sleep(200);
    }
    if (!item) throw new Error(`no sync appeared for ${connectionId}`);
    expect((await schedule(item.id)).state.paused).toBe(false);
    return item;
  };

  it('a new connection gets its schedule when authorised; deleting it removes schedule and records', async () => {
    const item = await importWithSchedule('conn-c');
    await waitForRun('conn-c', null);
    const records = () =>
      call(stack.gatewayUrl, 'GET', '/records?model=Contact&limit=1', {
        key: stack.secretKey,
        headers: { 'provider-config-key': KEY, 'connection-id': 'conn-c' },
      });
    // Read once: the orchestrator now knows the connection exists (and keeps that for a few seconds).
    expect((await records()).status).toBe(200);

    await nango.deleteConnection(KEY, 'conn-c');
    await expect(schedule(item.id)).rejects.toBeInstanceOf(ScheduleNotFoundError);
    // The deletion's announcement dropped what it knew: the very next read is refused, not served.
    expectError(await records(), 400, 'unknown_connection');
    expect((await statusOf('*')).map((s) => s.connection_id).sort()).toEqual([CONN_A, CONN_B]);
  });

  it('a connection deleted while the orchestrator is down loses its schedule once the orchestrator is back', async () => {
    const item = await importWithSchedule('conn-d');

    await stack.stopService('sync-orchestrator');
    // The vault cannot ask the orchestrator first; the deletion goes ahead anyway (fail-open).
    await nango.deleteConnection(KEY, 'conn-d');
    expect((await schedule(item.id)).state.paused).toBe(false);
    await stack.startReplica('sync-orchestrator');
    const gone = Date.now() + 60_000;
    for (;;) {
      const found = await schedule(item.id).then(
        () => true,
        (error: unknown) => {
          if (error instanceof ScheduleNotFoundError) return false;
          throw error;
        },
      );
      if (!found) break;
      if (Date.now() > gone) throw new Error('the deleted connection kept its schedule');
      await sleep(250);
    }
    // The schedule goes first, then the sync's row: the status may list the connection for a moment.
    const listed = async () => (await statusOf('*')).map((s) => s.connection_id).sort();
    while ((await listed()).includes('conn-d') && Date.now() < gone) await sleep(250);
    expect(await listed()).toEqual([CONN_A, CONN_B]);
  });

  it('a worker killed mid-run: its script stops when its lease runs out, another worker resumes from the checkpoint, no record lost or repeated', async () => {
    // Slow pages of 50: the run takes ~25 s, long enough to kill it midway.
    provider.pageSize = 50;
    provider.pageDelayMs = 400;
    provider.change(200, 500);
    const before = (await status(CONN_A))[0]!;
    const pagesBefore = provider.pages.length;
    const pagesOfA = () => provider.pages.slice(pagesBefore).filter((p) => p.connection === CONN_A);
    await nango.triggerSync(KEY, [SYNC], CONN_A);
    // Wait until the run has checkpointed a few pages in.
    const deadline = Date.now() + 30_000;
    while (pagesOfA().length < 12) {
      if (Date.now() > deadline) throw new Error('the run never started');
      await sleep(50);
    }
    const killedAt = Date.now();
    const [worker] = stack.workers;
    worker!.process.kill('SIGKILL');
    await new Promise((resolve) => worker!.process.once('exit', resolve));
    // No worker for a while: the orphaned script's lease (the heartbeat timeout, 5 s) runs out and
    // functions-runtime stops it; it asks for no page after that (one in flight may still come).
    const leaseEnds = killedAt + 5_000 + 1_500;
    await sleep(leaseEnds + 2_500 - Date.now());
    expect(pagesOfA().filter((p) => p.at > leaseEnds)).toEqual([]);
    stack.startWorker();

    const done = await waitForRun(CONN_A, before.finishedAt, SYNC, 150_000);
    expect(done.status).toBe('SUCCESS');
    const total = provider.contacts.length;
    expect(done.recordCount).toEqual({ Contact: total });
    expect(done.latestResult).toEqual({ Contact: { added: 0, updated: 200, deleted: 0 } });
    // The retry resumed from a checkpoint: no page after the kill started over from the first one.
    const after = pagesOfA().filter((p) => p.at > leaseEnds);
    expect(after.length).toBeGreaterThan(0);
    expect(after.some((p) => p.cursor === '0')).toBe(false);
    const { records } = await allRecords(CONN_A);
    const live = records.filter((r) => r._nango_metadata.deleted_at === null);
    expect(live).toHaveLength(total);
    expect(new Set(live.map((r) => r.id))).toEqual(new Set(provider.contacts.map((c) => c.id)));
    expect(live.filter((r) => r.revision === 2)).toHaveLength(300);
  });

  it("a worker SIGKILLed mid-run while another one polls: the run finishes on the other, the records are the provider's, none saved twice", async () => {
    const alive = () =>
      stack.workers.filter((w) => w.process.exitCode === null && w.process.signalCode === null);
    // One worker takes the run; the second starts once the run is under way, so the run is the first's.
    expect(alive()).toHaveLength(1);
    const [doomed] = alive();
    provider.pageSize = 50;
    provider.pageDelayMs = 400;
    provider.change(150, 600);
    const before = (await status(CONN_A))[0]!;
    const pagesBefore = provider.pages.length;
    const pagesOfA = () => provider.pages.slice(pagesBefore).filter((p) => p.connection === CONN_A);
    await nango.triggerSync(KEY, [SYNC], CONN_A);
    const deadline = Date.now() + 30_000;
    while (pagesOfA().length < 8) {
      if (Date.now() > deadline) throw new Error('the run never started');
      await sleep(50);
    }
    const survivor = stack.startWorker();
    doomed!.process.kill('SIGKILL');
    await new Promise((resolve) => doomed!.process.once('exit', resolve));

    const done = await waitForRun(CONN_A, before.finishedAt, SYNC, 150_000);
    expect(done.status).toBe('SUCCESS');
    expect(survivor.process.exitCode).toBeNull();
    const total = provider.contacts.length;
    // Each changed contact counted once: a page saved again by the retry would not be "updated" twice,
    // and one lost would leave its contacts at their old revision.
    expect(done.latestResult).toEqual({ Contact: { added: 0, updated: 150, deleted: 0 } });
    expect(done.recordCount).toEqual({ Contact: total });
    // The retry went on from a checkpoint, not from the first page.
    const cursors = pagesOfA().map((p) => p.cursor);
    expect(cursors.filter((c) => c === '0').length).toBeLessThanOrEqual(1);
    const { records } = await allRecords(CONN_A);
    const live = records.filter((r) => r._nango_metadata.deleted_at === null);
    expect(live).toHaveLength(total);
    expect(new Set(live.map((r) => r.id)).size).toBe(total);
    await expectProviderData();
  });

  it("a full resync stops the run it cancels: nothing that run fetched after is written, the records and checkpoint are the resync's", async () => {
    const [item] = await status(CONN_A);
    const triggered = temporal.workflow.getHandle(`sync-${item!.id}-trigger`);
    provider.pageSize = 100;
    provider.pageDelayMs = 0;
    // The run asks for page 500 (its checkpoint says 500) and waits for it.
    const held = provider.hold('500');
    try {
      await nango.triggerSync(KEY, [SYNC], CONN_A);
      await held.requested;
      const runsBefore = finishedRuns(stack).length;
      // The provider changes meanwhile; the held page still answers those contacts as they were.
      provider.change(100, 500);
      await nango.triggerSync(KEY, [SYNC], CONN_A, { reset: true });
      expect(await triggered.result()).toBe('succeeded');
      const done = (await status(CONN_A))[0]!;
      expect(done).toMatchObject({
        status: 'SUCCESS',
        latestResult: { Contact: { added: 0, updated: 100, deleted: 0 } },
        recordCount: { Contact: provider.contacts.length },
        checkpoint: null,
      });

      // The cancelled run's page comes now: its script was stopped, it saves nothing and asks for no more.
      await expectNothingAfterRelease(held, runsBefore);
      expect((await status(CONN_A))[0]!.checkpoint).toBeNull();

      // The next run starts from the start (no checkpoint of the old run) and deletes nothing.
      const from = provider.pages.length;
      await nango.triggerSync(KEY, [SYNC], CONN_A);
      expect(await triggered.result()).toBe('succeeded');
      expect(provider.pages[from]?.cursor).toBe('0');
      expect((await status(CONN_A))[0]).toMatchObject({
        status: 'SUCCESS',
        latestResult: { Contact: { added: 0, updated: 0, deleted: 0 } },
        recordCount: { Contact: provider.contacts.length },
      });
      await expectProviderData();
    } finally {
      held.release();
      provider.pageSize = 500;
    }
  });

  it("a run whose worker died while a full resync replaced it: the orchestrator refuses its script's late writes", async () => {
    const [item] = await status(CONN_A);
    const triggered = temporal.workflow.getHandle(`sync-${item!.id}-trigger`);
    provider.pageSize = 100;
    const held = provider.hold('500');
    try {
      await nango.triggerSync(KEY, [SYNC], CONN_A);
      await held.requested;
      const runsBefore = finishedRuns(stack).length;
      // Its worker dies: nobody is left to tell functions-runtime to stop the script, which waits on (until
      // its lease runs out, 5 s later).
      const worker = stack.workers.find((w) => w.process.exitCode === null && w.process.signalCode === null);
      worker!.process.kill('SIGKILL');
      await new Promise((resolve) => worker!.process.once('exit', resolve));
      provider.change(100, 500);
      await nango.triggerSync(KEY, [SYNC], CONN_A, { reset: true });
      stack.startWorker();
      expect(await triggered.result()).toBe('succeeded');
      expect((await status(CONN_A))[0]).toMatchObject({
        status: 'SUCCESS',
        latestResult: { Contact: expect.objectContaining({ added: 0, deleted: 0 }) },
        recordCount: { Contact: provider.contacts.length },
        checkpoint: null,
      });

      // The old script gets its stale page now, if its lease has not stopped it yet: its batchSave is
      // refused (sync_run_superseded), which ends it: no stale record, no checkpoint, no further page.
      await expectNothingAfterRelease(held, runsBefore);
      expect((await status(CONN_A))[0]).toMatchObject({ status: 'SUCCESS', checkpoint: null });
    } finally {
      held.release();
      provider.pageSize = 500;
    }
  });

  // Last: its runs share the fake provider's page log, which the tests above read.
  it('a connection deleted while the orchestrator is down and re-created under its id, heard of before the deletion: a new sync that the late deletion keeps, none of the old records', async () => {
    const old = await importWithSchedule('conn-e');
    const total = provider.contacts.length;
    expect((await waitForRun('conn-e', null)).recordCount).toEqual({ Contact: total });

    await stack.stopService('sync-orchestrator');
    await nango.deleteConnection(KEY, 'conn-e');
    // The deletion's event waits in the orchestrator's durable consumer. This test takes it from there
    // and holds it, so the orchestrator hears of the new connection first (the order that lost the new
    // connection its sync), then hands it back.
    const nc = await connect({ servers: stack.natsUrl });
    try {
      const consumer = await nc
        .jetstream()
        .consumers.get(EVENT_STREAM.name, EVENT_CONSUMERS.orchestratorConnections);
      const held = await consumer.next({ expires: 30_000 });
      expect(held?.json()).toMatchObject({ connectionId: 'conn-e', operation: 'deletion' });
      held!.working();

      // A new connection needs the orchestrator (its validate-connection scripts).
      await stack.startReplica('sync-orchestrator');
      const again = await api('POST', '/connections', {
        provider_config_key: KEY,
        connection_id: 'conn-e',
        credentials: { type: 'API_KEY', apiKey: API_KEY },
        connection_config: { origin: provider.url, account: 'acme' },
      });
      expect(again.status).toBe(201);
      const deadline = Date.now() + 60_000;
      let fresh: SyncStatusItem | undefined;
      for (;;) {
        fresh = (await status('conn-e').catch(() => []))[0];
        if (fresh && fresh.id !== old.id) break;
        held!.working();
        if (Date.now() > deadline)
          throw new Error(`no new sync for the re-created connection: ${JSON.stringify(fresh)}`);
        await sleep(250);
      }
      await expect(schedule(old.id)).rejects.toBeInstanceOf(ScheduleNotFoundError);
      // The deletion arrives now, late: it leaves the new connection's sync alone.
      held!.nak();
      const jsm = await nc.jetstreamManager();
      const handled = Date.now() + 30_000;
      for (;;) {
        const info = await jsm.consumers.info(EVENT_STREAM.name, EVENT_CONSUMERS.orchestratorConnections);
        if (info.num_pending === 0 && info.num_ack_pending === 0) break;
        if (Date.now() > handled) throw new Error('the orchestrator did not take the deletion back');
        await sleep(100);
      }
      expect((await status('conn-e')).map((s) => s.id)).toEqual([fresh.id]);
      expect((await schedule(fresh.id)).state.paused).toBe(false);
    } finally {
      await nc.close();
    }
    // Its first run finds no record of the deleted connection: everything is new again.
    const run = await waitForRun('conn-e', null);
    expect(run.latestResult).toEqual({ Contact: { added: total, updated: 0, deleted: 0 } });
    await nango.deleteConnection(KEY, 'conn-e');
  });

  it('answers a trigger with 503 service_unavailable and Retry-After while Temporal lacks the namespace or never answers, and runs it once Temporal is back', async () => {
    const trigger = () =>
      call(stack.gatewayUrl, 'POST', '/sync/trigger', {
        key: stack.secretKey,
        body: { provider_config_key: KEY, connection_id: CONN_A, syncs: [SYNC] },
      });
    // A Temporal that accepts connections and never says a word.
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const silentPort = (silent.address() as { port: number }).port;
    /** The first answer of an orchestrator started with `env` (a 503 of the gateway finding none is not it). */
    const answerWith = async (env: Record<string, string>) => {
      await stack.stopService('sync-orchestrator');
      await stack.startReplica('sync-orchestrator', env);
      for (;;) {
        const res = await trigger();
        if (res.status !== 503 || JSON.stringify(res.body).includes('Temporal')) return res;
        await sleep(250);
      }
    };
    try {
      for (const env of [
        { TEMPORAL_NAMESPACE: `absent-${randomUUID().slice(0, 8)}` },
        // A short deadline keeps the answer well inside the gateway's own request timeout on a busy machine.
        { TEMPORAL_ADDRESS: `127.0.0.1:${silentPort}`, TEMPORAL_CALL_DEADLINE_MS: '3000' },
      ] as Record<string, string>[]) {
        const res = await answerWith(env);
        expect({ status: res.status, retryAfter: res.headers.get('retry-after'), body: res.body }).toEqual({
          status: 503,
          retryAfter: expect.stringMatching(/^[0-9]+$/),
          body: { error: expect.objectContaining({ code: 'service_unavailable' }) },
        });
      }
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
      await stack.stopService('sync-orchestrator');
      await stack.startReplica('sync-orchestrator');
    }
    // The same request, retried, is taken once Temporal answers.
    const again = await waitForOk(trigger);
    expect(again.body).toEqual({ success: true });
  }, 300_000);
});
