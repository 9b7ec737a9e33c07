import { randomBytes, randomUUID } from 'node:crypto';
import { Nango } from '@nangohq/node';
import { runRewrapCli, startStack, type RunningService, type Stack } from '@switchboard/testing';
import { waitUntilPolling } from './support/processes';
import { openRecordsRun, type RecordsRun } from './support/records-run';

/**
 * Rotating the master key of sync records on a running installation: records a sync saved are read with
 * `listRecords` before, after the orchestrator is rolled to the keyring `old,new`, after `rotate-cli`
 * rewrapped them (while a sync keeps saving), and once the orchestrator has the new key alone.
 */

type Listed = { id: string; name: string; _nango_metadata: unknown };

describe('sync records master key rotation', () => {
  let stack: Stack;
  let nango: Nango;
  let run: RecordsRun;
  const integration = `rec-keys-${randomUUID().slice(0, 8)}`;
  const connectionId = 'c-1';
  const MODEL = 'Contact';
  const COUNT = 1500;

  const save = (records: { id: string; name: string }[]) => run.save(MODEL, records);

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
      environmentId: run.caller.environmentId,
    });

  /** Replaces every orchestrator process (service and worker) with one using `keyring`, no gap in service. */
  const rollOrchestrator = async (keyring: string) => {
    const alive = (r: RunningService) => r.process.exitCode === null && r.process.signalCode === null;
    const previous = [...stack.replicas['sync-orchestrator'].filter(alive), ...stack.workers.filter(alive)];
    await stack.startReplica('sync-orchestrator', { SWITCHBOARD_MASTER_KEYS: keyring });
    // The old processes stop only once the new worker polls: its task queue is never left without one.
    await waitUntilPolling(stack.startWorker({ SWITCHBOARD_MASTER_KEYS: keyring }));
    for (const old of previous) {
      const exited = new Promise((resolve) => old.process.once('exit', resolve));
      old.process.kill('SIGTERM');
      await exited;
    }
  };

  const versions = async (): Promise<number[]> => {
    const { rows } = await run.db.query<{ v: number }>(
      `SELECT DISTINCT get_byte(payload, 1) << 24 | get_byte(payload, 2) << 16 | get_byte(payload, 3) << 8
         | get_byte(payload, 4) AS v
       FROM orchestrator.records WHERE environment_id = $1 ORDER BY 1`,
      [run.caller.environmentId],
    );
    return rows.map((r) => r.v);
  };

  beforeAll(async () => {
    stack = await startStack({
      // The connection (auth-connect, the vault) and the records store (the orchestrator and its worker)
      // behind the API: no script runs, nothing is proxied or sent out.
      services: ['gateway', 'auth-connect', 'connections-vault', 'sync-orchestrator'],
      env: { SWITCHBOARD_RATE_LIMIT_PER_MIN: '100000' },
      readyTimeoutMs: 150_000,
    });
    nango = new Nango({ secretKey: stack.secretKey, host: stack.gatewayUrl });
    run = await openRecordsRun(stack, nango, { integration, connectionId, syncName: 'contacts' });
  }, 180_000);

  afterAll(async () => {
    await run?.close();
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
