import { rmSync } from 'node:fs';
import { Nango } from '@nangohq/node';
import type { SyncStatusItem } from '@switchboard/contracts';
import type { Stack } from '@switchboard/testing';
import { Client, Connection } from '@temporalio/client';
import type { Client as PgClient } from 'pg';
import { runFailedSince } from './barriers';
import { call, type ApiResponse } from './http';
import { nangoDeploy, prepareProject } from './nango-cli';
import { ContactsProvider, setUpRecordhub } from './syncs-fakes';
import { WebhookReceiver } from './webhook-receiver';

export const API_KEY = 'recordhub-api-key';
export const KEY = 'recordhub';
export const CONN_A = 'conn-a';
export const CONN_B = 'conn-b';
export const SYNC = 'contacts';
/** How many contacts the provider starts with, unless a spec asks for another number. */
export const INITIAL = 3000;

export interface NangoRecord {
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

export interface SyncWebhook {
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

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The world of the syncs specs: the `contacts` sync of the `syncs-project` fixture on the `recordhub`
 * integration, two connections (CONN_A, CONN_B) to a fake contacts provider (of INITIAL contacts), and the
 * environment's webhooks sent to a receiver; with the readings and waits the specs share. `start` sets it
 * up on the stack it is given; `deploy` deploys the project with the nango CLI.
 */
export class SyncsSuite {
  stack!: Stack;
  provider!: ContactsProvider;
  receiver!: WebhookReceiver;
  nango!: Nango;
  temporal!: Client;
  project!: string;
  signingKey!: string;
  private temporalConnection: Connection | undefined;

  constructor(private readonly contacts = INITIAL) {}

  async start(startStack: () => Promise<Stack>): Promise<void> {
    [this.provider, this.receiver] = await Promise.all([
      new ContactsProvider(API_KEY, this.contacts).start(),
      new WebhookReceiver().start(),
    ]);
    this.stack = await startStack();
    this.temporalConnection = await Connection.connect({
      address: this.stack.envOf('sync-orchestrator').TEMPORAL_ADDRESS!,
    });
    this.temporal = new Client({ connection: this.temporalConnection });
    this.nango = new Nango({ secretKey: this.stack.secretKey, host: this.stack.gatewayUrl });
    this.signingKey = await setUpRecordhub(
      this.stack,
      this.provider,
      API_KEY,
      [CONN_A, CONN_B],
      `${this.receiver.url}/hooks`,
    );
    this.project = prepareProject('syncs-project');
  }

  /** Deploys the project with the nango CLI and waits for the first run of each connection. */
  async deploy(): Promise<void> {
    const run = await nangoDeploy(this.project, this.stack.gatewayUrl, this.stack.secretKey);
    expect({ code: run.code, stdout: run.stdout }).toEqual({
      code: 0,
      stdout: expect.stringContaining('Successfully deployed the functions'),
    });
    await Promise.all([this.waitForRun(CONN_A, null), this.waitForRun(CONN_B, null)]);
  }

  async stop(): Promise<void> {
    await this.stack?.stop();
    await this.temporalConnection?.close();
    await Promise.all([this.provider?.close(), this.receiver?.stop()]);
    if (this.project) rmSync(this.project, { recursive: true, force: true });
  }

  /** A raw request to the gateway with the environment's secret key, and a JSON body when one is given. */
  api = (method: string, path: string, body?: unknown): Promise<ApiResponse> =>
    call(this.stack.gatewayUrl, method, path, {
      key: this.stack.secretKey,
      ...(body !== undefined ? { body } : {}),
    });

  /** GET /records of the `Contact` model for a connection of the integration, `query` appended as is. */
  records = (connectionId: string, query = ''): Promise<ApiResponse> =>
    call(this.stack.gatewayUrl, 'GET', `/records?model=Contact${query}`, {
      key: this.stack.secretKey,
      headers: { 'provider-config-key': KEY, 'connection-id': connectionId },
    });

  /**
   * The syncs' status. A 503 (Temporal slower than the orchestrator's deadline on a loaded machine) tells
   * the client to retry, and the read has no effect: so it is asked again, for up to 30 s; a 503 past that
   * fails with the API's message.
   */
  statusOf = async (syncs: string[] | '*', connectionId?: string) => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        // @nangohq/node's SyncStatus type lacks fields the server sends (connection_id, variant, ...).
        return (await this.nango.syncStatus(KEY, syncs, connectionId)).syncs as unknown as SyncStatusItem[];
      } catch (error) {
        const response = (error as { response?: { status?: number; data?: unknown } }).response;
        if (response?.status !== 503) throw error;
        if (Date.now() > deadline) throw new Error(`GET /sync/status: 503 ${JSON.stringify(response.data)}`);
        await sleep(500);
      }
    }
  };

  status = (connectionId: string, syncs: string[] | '*' = [SYNC]) => this.statusOf(syncs, connectionId);

  /** Waits until the sync of the connection has finished a run after `after` (ISO), and answers its status. */
  waitForRun = async (
    connectionId: string,
    after: string | null | undefined,
    name = SYNC,
    timeoutMs = 120_000,
  ) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const [item] = await this.status(connectionId, [name]);
      if (item && item.status !== 'RUNNING' && item.finishedAt && (!after || item.finishedAt > after)) {
        return item;
      }
      if (Date.now() > deadline) throw new Error(`no run of ${name} finished: ${JSON.stringify(item)}`);
      await sleep(200);
    }
  };

  allRecords = async (connectionId: string, extra: Record<string, unknown> = {}) => {
    const records: NangoRecord[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: { records: NangoRecord[]; next_cursor: string | null } = (await this.nango.listRecords({
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

  syncHooks = () =>
    this.receiver.received
      .filter((h) => h.path === '/hooks')
      .map((h) => ({ hook: h, body: JSON.parse(h.body) as SyncWebhook }))
      .filter((h) => h.body.type === 'sync');

  waitForHooks = async (predicate: (body: SyncWebhook) => boolean, count = 1) => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const found = this.syncHooks().filter((h) => predicate(h.body));
      if (found.length >= count) return found;
      if (Date.now() > deadline) {
        throw new Error(`sync webhooks missing: ${JSON.stringify(this.syncHooks().map((h) => h.body))}`);
      }
      await sleep(100);
    }
  };

  schedule = (syncId: string) => this.temporal.schedule.getHandle(`sync-${syncId}`).describe();

  /** Waits until no page was asked for during a second (no run is fetching). */
  waitForQuiet = async () => {
    const deadline = Date.now() + 30_000;
    for (let seen = -1; seen !== this.provider.pages.length; ) {
      if (Date.now() > deadline) throw new Error('the provider is still being paged');
      seen = this.provider.pages.length;
      await sleep(1000);
    }
  };

  /** The live records of CONN_A are the provider's contacts as they are now, exactly; none of them is deleted. */
  expectProviderData = async () => {
    const { records } = await this.allRecords(CONN_A);
    const live = records.filter((r) => r._nango_metadata.deleted_at === null);
    const stored = new Map(live.map((r) => [r.id, { id: r.id, name: r.name, revision: r.revision }]));
    const differing = this.provider.contacts.filter((c) => {
      const mine = stored.get(c.id);
      return !mine || mine.name !== c.name || mine.revision !== c.revision;
    });
    expect({ live: live.length, differing: differing.map((c) => c.id) }).toEqual({
      live: this.provider.contacts.length,
      differing: [],
    });
  };

  /**
   * Renames `changed` contacts from `from` on, triggers a run of the sync for `connectionId` with slow pages
   * of 25 (400 ms each: a run of ~25 s, long enough to cut it short midway and for its lease to run out
   * before its script could finish) and waits until it has fetched `pages` pages. Answers the status before
   * the run and the pages of the connection fetched since the trigger.
   */
  startSlowRun = async (connectionId: string, changed: number, from: number, pages: number) => {
    this.provider.pageSize = 25;
    this.provider.pageDelayMs = 400;
    this.provider.change(changed, from);
    const before = (await this.status(connectionId))[0]!;
    const pagesBefore = this.provider.pages.length;
    const pagesOf = () => this.provider.pages.slice(pagesBefore).filter((p) => p.connection === connectionId);
    await this.nango.triggerSync(KEY, [SYNC], connectionId);
    const deadline = Date.now() + 30_000;
    while (pagesOf().length < pages) {
      if (Date.now() > deadline) throw new Error('the run never started');
      await sleep(50);
    }
    return { before, pagesOf };
  };

  /**
   * Releases a page held from a stopped (or fenced) script, whose run functions-runtime had not finished at
   * `runsBefore` (a count of `finishedRuns`): once that run has ended as a failure (stopped, or its late write
   * refused), its script asked for no more pages, and the records stay the provider's.
   */
  expectNothingAfterRelease = async (held: { release(): void }, runsBefore: number) => {
    const released = this.provider.pages.length;
    held.release();
    await runFailedSince(this.stack, runsBefore);
    expect(this.provider.pages.slice(released)).toEqual([]);
    await this.expectProviderData();
  };

  /** Imports a connection and waits for its sync to appear with a running schedule. */
  importWithSchedule = async (connectionId: string): Promise<SyncStatusItem> => {
    const imported = await call(this.stack.gatewayUrl, 'POST', '/connections', {
      key: this.stack.secretKey,
      body: {
        provider_config_key: KEY,
        connection_id: connectionId,
        credentials: { type: 'API_KEY', apiKey: API_KEY },
        connection_config: { origin: this.provider.url, account: 'acme' },
      },
    });
    expect([200, 201]).toContain(imported.status);
    const deadline = Date.now() + 30_000;
    let item: SyncStatusItem | undefined;
    while (!item && Date.now() < deadline) {
      item = (await this.statusOf([SYNC])).find((s) => s.connection_id === connectionId);
      if (!item) await sleep(200);
    }
    if (!item) throw new Error(`no sync appeared for ${connectionId}`);
    expect((await this.schedule(item.id)).state.paused).toBe(false);
    return item;
  };
}

/** A stored `Contact` record of a connection, as its row holds it: the id and the sealed payload. */
export interface RecordRow {
  id: string;
  payload: Buffer;
}

/**
 * The `Contact` row of `connectionId` at `offset` in the order the record pages follow (updated_at, then
 * id), read straight from the orchestrator's table, and a way to put a payload back into a row: for tests
 * that damage one record of a page on purpose and repair it after.
 */
export function recordRows(db: PgClient, stack: Stack, connectionId: string) {
  return {
    at: async (offset: number): Promise<RecordRow> =>
      (
        await db.query<RecordRow>(
          `SELECT r.id::text, r.payload FROM orchestrator.records r
          JOIN auth.environments e ON e.id::text = r.environment_id::text
          WHERE e.uuid = $1 AND r.provider_config_key = $2 AND r.connection_id = $3 AND r.model = 'Contact'
          ORDER BY r.updated_at, r.id OFFSET $4 LIMIT 1`,
          [stack.environmentUuid, KEY, connectionId, offset],
        )
      ).rows[0]!,
    setPayload: async (id: string, payload: Buffer): Promise<void> => {
      await db.query('UPDATE orchestrator.records SET payload = $2 WHERE id = $1::uuid', [id, payload]);
    },
  };
}

/**
 * The variants of one sync on one connection, as rows of `orchestrator.syncs` (`baseId` is the base
 * variant's row): `siblings` lists them all, `fill` writes `count` rows named `cap-1`.. as variants created
 * earlier leave them (not scheduled: no run starts), and `removeFilled` deletes those rows again.
 */
export function variantRows(db: PgClient, baseId: string) {
  return {
    siblings: async (): Promise<string[]> =>
      (
        await db.query<{ variant: string }>(
          `SELECT s.variant FROM orchestrator.syncs s
           JOIN orchestrator.syncs b USING (environment_id, provider_config_key, connection_id, name)
           WHERE b.id = $1`,
          [baseId],
        )
      ).rows.map((r) => r.variant),
    fill: async (count: number): Promise<number | null> =>
      (
        await db.query(
          `INSERT INTO orchestrator.syncs (id, environment_id, provider_config_key, connection_id, name, variant, updated_at)
         SELECT gen_random_uuid(), environment_id, provider_config_key, connection_id, name, 'cap-' || g, now()
         FROM orchestrator.syncs, generate_series(1, $2::int) AS g WHERE id = $1`,
          [baseId, count],
        )
      ).rowCount,
    removeFilled: async (): Promise<void> => {
      await db.query(
        `DELETE FROM orchestrator.syncs s USING orchestrator.syncs b
         WHERE b.id = $1 AND s.environment_id = b.environment_id AND s.provider_config_key = b.provider_config_key
           AND s.connection_id = b.connection_id AND s.name = b.name AND s.variant LIKE 'cap-%'`,
        [baseId],
      );
    },
  };
}
