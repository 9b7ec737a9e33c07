import { randomBytes, randomUUID } from 'node:crypto';
import { Nango } from '@nangohq/node';
import { RECORDS_SUBJECTS, type Caller } from '@switchboard/contracts';
import { runRewrapCli, startStack, type RunningService, type Stack } from '@switchboard/testing';
import { connect, type NatsConnection } from 'nats';
import { Client } from 'pg';

/**
 * Rotating the master key of sync records on a running installation: records a sync saved are read with
 * `listRecords` before, after the orchestrator is rolled to the keyring `old,new`, after `rotate-cli`
 * rewrapped them (while a sync keeps saving), and once the orchestrator has the new key alone.
 */

type Listed = { id: string; name: string; _nango_metadata: unknown };

describe('sync records master key rotation', () => {
  let stack: Stack;
  let nango: Nango;
  let db: Client;
  let nc: NatsConnection;
  let caller: Caller;
  let runId: string;
  const integration = `rec-keys-${randomUUID().slice(0, 8)}`;
  const connectionId = 'c-1';
  const MODEL = 'Contact';
  const COUNT = 1500;

  /** Saves records as a sync script's run does (`orchestrator.v1.records.write`, fenced by the run). */
  const save = async (records: { id: string; name: string }[]) => {
    const msg = await nc.request(
      RECORDS_SUBJECTS.write,
      JSON.stringify({
        pattern: RECORDS_SUBJECTS.write,
        id: randomUUID(),
        data: {
          caller,
          providerConfigKey: integration,
          connectionId,
          runId,
          model: MODEL,
          op: 'save',
          records,
        },
      }),
      { timeout: 30_000 },
    );
    const reply = JSON.parse(Buffer.from(msg.data).toString('utf8')) as { response?: { ok: boolean } };
    expect(reply.response?.ok).toBe(true);
  };

  /** Every record through the public API, page by page; fails if any does not decrypt. */
  const listAll = async (): Promise<Map<string, string>> => {
    const seen = new Map<string, string>();
    let cursor: string | null | undefined;
    do {
      const page = await nango.listRecords<Listed>({
        providerConfigKey: integration,
        connectionId,
        model: MODEL,
        limit: 1000,
        ...(cursor ? { cursor } : {}),
      });
      for (const record of page.records as Listed[]) seen.set(record.id, record.name);
      cursor = page.next_cursor;
    } while (cursor);
    return seen;
  };

  const rotate = (keyring: string) =>
    runRewrapCli<string>('apps/sync-orchestrator/dist/rotate-cli.js', {
      databaseUrl: stack.databaseUrl,
      masterKeys: keyring,
      batchSize: 50,
      environmentId: caller.environmentId,
    });

  /** Replaces every orchestrator process (service and worker) with one using `keyring`, no gap in service. */
  const rollOrchestrator = async (keyring: string) => {
    const alive = (r: RunningService) => r.process.exitCode === null && r.process.signalCode === null;
    const previous = [...stack.replicas['sync-orchestrator'].filter(alive), ...stack.workers.filter(alive)];
    await stack.startReplica('sync-orchestrator', { SWITCHBOARD_MASTER_KEYS: keyring });
    stack.startWorker({ SWITCHBOARD_MASTER_KEYS: keyring });
    for (const old of previous) {
      const exited = new Promise((resolve) => old.process.once('exit', resolve));
      old.process.kill('SIGTERM');
      await exited;
    }
  };

  const versions = async (): Promise<number[]> => {
    const { rows } = await db.query<{ v: number }>(
      `SELECT DISTINCT get_byte(payload, 1) << 24 | get_byte(payload, 2) << 16 | get_byte(payload, 3) << 8
         | get_byte(payload, 4) AS v
       FROM orchestrator.records WHERE environment_id = $1 ORDER BY 1`,
      [caller.environmentId],
    );
    return rows.map((r) => r.v);
  };

  beforeAll(async () => {
    stack = await startStack({ env: { SWITCHBOARD_RATE_LIMIT_PER_MIN: '100000' }, readyTimeoutMs: 150_000 });
    nango = new Nango({ secretKey: stack.secretKey, host: stack.gatewayUrl });
    db = new Client({ connectionString: stack.databaseUrl });
    await db.connect();
    nc = await connect({ servers: stack.natsUrl });
    const env = (
      await db.query<{ id: number; account_id: number; name: string }>(
        'SELECT id, account_id, name FROM auth.environments WHERE uuid = $1',
        [stack.environmentUuid],
      )
    ).rows[0]!;
    caller = {
      accountId: env.account_id,
      environmentId: env.id,
      environmentUuid: stack.environmentUuid,
      environmentName: env.name,
    };
    await nango.createIntegration({ provider: 'anthropic', unique_key: integration });
    const res = await fetch(`${stack.gatewayUrl}/connections`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.secretKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        provider_config_key: integration,
        connection_id: connectionId,
        credentials: { type: 'API_KEY', apiKey: `key_${randomBytes(8).toString('hex')}` },
      }),
    });
    expect(res.status).toBe(201);
    // A sync run in progress, as the orchestrator records one when it starts it: its writes are let through.
    const sync = await db.query<{ id: string }>(
      `INSERT INTO orchestrator.syncs (id, environment_id, provider_config_key, connection_id, name, variant, updated_at)
       VALUES ($1, $2, $3, $4, 'contacts', 'base', now()) RETURNING id`,
      [randomUUID(), caller.environmentId, integration, connectionId],
    );
    runId = randomUUID();
    await db.query(
      `INSERT INTO orchestrator.sync_runs (id, sync_id, status, type, workflow_id, attempts)
       VALUES ($1, $2, 'RUNNING', 'INCREMENTAL', 'records-rotation-e2e', 1)`,
      [runId, sync.rows[0]!.id],
    );
  }, 180_000);

  afterAll(async () => {
    await nc?.close();
    await db?.end();
    await stack?.stop();
  });

  it('keeps every record readable through the rollout, the rewrap and the old key retired', async () => {
    const expected = new Map(Array.from({ length: COUNT }, (_, i) => [`r-${i}`, `record ${i}`]));
    const all = [...expected].map(([id, name]) => ({ id, name }));
    for (let i = 0; i < all.length; i += 1000) await save(all.slice(i, i + 1000));
    expect(await listAll()).toEqual(expected);

    const oldKeyring = stack.envOf('sync-orchestrator').SWITCHBOARD_MASTER_KEYS!;
    const oldVersion = Math.max(...oldKeyring.split(',').map((entry) => Number(entry.split(':')[0])));
    const newVersion = oldVersion + 1;
    const newKey = `${newVersion}:${randomBytes(32).toString('base64')}`;
    expect(await versions()).toEqual([oldVersion]);

    // 1. The orchestrator learns the new version: it reads both, and seals what a sync saves now with the new one.
    await rollOrchestrator(`${oldKeyring},${newKey}`);
    expect(await listAll()).toEqual(expected);

    // 2. Rewrap while a sync keeps saving (changed records, sealed with the new key meanwhile).
    let rotating = true;
    let saves = 0;
    const saving = (async () => {
      for (let n = 1; rotating; n++) {
        // The first 600 records only: the other 900 are left for the rewrap whatever the timing.
        const from = (n * 40) % 600;
        const changed = all.slice(from, from + 40).map((r) => ({ ...r, name: `${r.name} (v${n})` }));
        await save(changed);
        for (const r of changed) expected.set(r.id, r.name);
        saves++;
      }
    })();
    const report = await rotate(`${oldKeyring},${newKey}`);
    rotating = false;
    await saving;
    expect(saves).toBeGreaterThan(0);
    expect(report).toMatchObject({ currentVersion: newVersion, failed: [], remaining: 0 });
    expect(report.scanned).toBeGreaterThanOrEqual(COUNT - 600);
    // Each record it found on the old key was rewrapped, or was rewritten by the sync meanwhile.
    expect(report.rewrapped + report.changedConcurrently).toBe(report.scanned);
    expect(await versions()).toEqual([newVersion]);
    expect(await listAll()).toEqual(expected);
    expect(await rotate(`${oldKeyring},${newKey}`)).toEqual({
      currentVersion: newVersion,
      scanned: 0,
      rewrapped: 0,
      changedConcurrently: 0,
      failed: [],
      remaining: 0,
    });

    // 3. Retire the old version: every record still reads with the new key alone.
    await rollOrchestrator(newKey);
    expect(await listAll()).toEqual(expected);
  }, 120_000);
});
