import { randomBytes, randomUUID } from 'node:crypto';
import { Nango } from '@nangohq/node';
import { freePort, runRewrapCli, startStack, type RunningService, type Stack } from '@switchboard/testing';
import { Client } from 'pg';
import { waitFor } from './support/processes';

/**
 * Rotating the master key of a running installation: roll a keyring with the new version out to the
 * vault, rewrap every row with `rotate-cli` while reads go on, then retire the old version.
 */

describe('master key rotation', () => {
  let stack: Stack;
  let nango: Nango;
  let db: Client;
  let environmentId: number;
  const integration = `keys-${randomUUID().slice(0, 8)}`;
  const expected = new Map<string, string>();
  const COUNT = 40;

  const rotate = (keyring: string) =>
    runRewrapCli<number>('apps/connections-vault/dist/rotate-cli.js', {
      databaseUrl: stack.databaseUrl,
      masterKeys: keyring,
      batchSize: 7,
      environmentId: environmentId,
    });

  /** Replaces the running vault process(es) with one using `keyring`, with no gap in service. */
  const rollVault = async (keyring: string): Promise<RunningService> => {
    const previous = stack.replicas['connections-vault'].filter(
      (r) => r.process.exitCode === null && r.process.signalCode === null,
    );
    const next = await stack.startReplica('connections-vault', { SWITCHBOARD_MASTER_KEYS: keyring });
    for (const old of previous) {
      const exited = new Promise((resolve) => old.process.once('exit', resolve));
      old.process.kill('SIGTERM');
      await exited;
    }
    return next;
  };

  const versions = async (): Promise<number[]> => {
    const { rows } = await db.query(
      `SELECT split_part(credentials, '.', 2)::int AS v FROM vault.connections WHERE environment_id = $1 ORDER BY id`,
      [environmentId],
    );
    return rows.map((r: { v: number }) => r.v);
  };

  beforeAll(async () => {
    stack = await startStack({
      // Integrations (auth-connect), connections (the vault, which asks the orchestrator for the
      // integration's validate-connection script) and the API in front are all these tests touch.
      services: ['gateway', 'auth-connect', 'connections-vault', 'sync-orchestrator'],
      env: { SWITCHBOARD_RATE_LIMIT_PER_MIN: '100000' },
      serviceEnv: { 'auth-connect': { CONNECT_PORT: String(await freePort()), CONNECT_HOST: '127.0.0.1' } },
      readyTimeoutMs: 150_000,
    });
    nango = new Nango({ secretKey: stack.secretKey, host: stack.gatewayUrl });
    db = new Client({ connectionString: stack.databaseUrl });
    await db.connect();
    environmentId = (
      await db.query('SELECT id FROM auth.environments WHERE uuid = $1', [stack.environmentUuid])
    ).rows[0].id;
    await nango.createIntegration({ provider: 'anthropic', unique_key: integration });
    for (let i = 0; i < COUNT; i++) {
      const apiKey = `key_SENTINEL_${randomBytes(12).toString('hex')}`;
      const res = await fetch(`${stack.gatewayUrl}/connections`, {
        method: 'POST',
        headers: { authorization: `Bearer ${stack.secretKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          provider_config_key: integration,
          connection_id: `c-${i}`,
          credentials: { type: 'API_KEY', apiKey },
        }),
      });
      expect(res.status).toBe(201);
      expected.set(`c-${i}`, apiKey);
    }
  }, 180_000);

  afterAll(async () => {
    await db?.end();
    await stack?.stop();
  });

  it('rewraps every row to the new version while reads keep succeeding, and reads still work once the old key is gone', async () => {
    const oldKeyring = stack.envOf('connections-vault').SWITCHBOARD_MASTER_KEYS!;
    const oldVersion = Math.max(...oldKeyring.split(',').map((entry) => Number(entry.split(':')[0])));
    const newVersion = oldVersion + 1;
    const newKey = `${newVersion}:${randomBytes(32).toString('base64')}`;
    expect(new Set(await versions())).toEqual(new Set([oldVersion]));

    // 1. Every vault process learns the new version (it now encrypts with it and still reads the old one).
    await rollVault(`${oldKeyring},${newKey}`);

    // 2. Rewrap while clients keep reading (and one connection is re-imported, a concurrent write).
    const replacement = `key_SENTINEL_${randomBytes(12).toString('hex')}`;
    const original = expected.get('c-3');
    let replaced = false;
    let reading = true;
    let reads = 0;
    let rewrapDone = false;
    /** Per reader, the reads it started after the rewrap had finished and completed. */
    const readsAfterRewrap = [0, 0, 0, 0];
    const wrong: string[] = [];
    const readers = readsAfterRewrap.map(async (_, r) => {
      for (let n = 0; reading; n++) {
        const afterRewrap = rewrapDone;
        const id = `c-${(r * 11 + n) % COUNT}`;
        try {
          // c-3 is re-imported concurrently: a read that starts before that write is acknowledged may
          // see either value; one that starts after must see the new one.
          const racing = id === 'c-3' && !replaced;
          const token = (await nango.getToken(integration, id)) as { apiKey?: string };
          const acceptable = racing ? [original, replacement] : [expected.get(id)];
          if (!acceptable.includes(token.apiKey)) wrong.push(`${id}: wrong key`);
        } catch (error) {
          wrong.push(
            `${id}: ${(error as { response?: { status: number } }).response?.status ?? String(error)}`,
          );
        }
        reads++;
        if (afterRewrap) readsAfterRewrap[r]!++;
      }
    });
    const [report] = await Promise.all([
      rotate(`${oldKeyring},${newKey}`),
      fetch(`${stack.gatewayUrl}/connections`, {
        method: 'POST',
        headers: { authorization: `Bearer ${stack.secretKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          provider_config_key: integration,
          connection_id: 'c-3',
          credentials: { type: 'API_KEY', apiKey: replacement },
        }),
      }).then((res) => {
        expect(res.status).toBe(201);
        expected.set('c-3', replacement);
        replaced = true;
      }),
    ]);
    // Keep reading after the rewrap too: every reader completes a few reads it started once it was over.
    rewrapDone = true;
    await waitFor(
      'every reader to read after the rewrap',
      async () => (readsAfterRewrap.every((n) => n >= 3) ? true : undefined),
      30_000,
      20,
    );
    reading = false;
    await Promise.all(readers);

    expect(report).toMatchObject({ currentVersion: newVersion, failed: [], remaining: 0 });
    expect(report.rewrapped).toBeGreaterThanOrEqual(COUNT - 1);
    expect(reads).toBeGreaterThan(20);
    expect(wrong).toEqual([]);
    expect(new Set(await versions())).toEqual(new Set([newVersion]));

    // 3. Running it again finds nothing to do.
    expect(await rotate(`${oldKeyring},${newKey}`)).toEqual({
      currentVersion: newVersion,
      scanned: 0,
      rewrapped: 0,
      changedConcurrently: 0,
      failed: [],
      remaining: 0,
    });

    // 4. Retire the old version: every connection is still readable with the new key alone.
    await rollVault(newKey);
    for (const [id, apiKey] of expected) {
      expect(await nango.getToken(integration, id)).toEqual({ type: 'API_KEY', apiKey });
    }
  }, 120_000);

  it('never prints a credential in the vault logs', () => {
    const logs = stack.logs('connections-vault');
    for (const apiKey of expected.values()) expect(logs).not.toContain(apiKey);
  });
});
