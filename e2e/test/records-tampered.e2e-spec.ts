import { randomBytes, randomUUID } from 'node:crypto';
import { Nango } from '@nangohq/node';
import { RECORDS_SUBJECTS, type Caller } from '@switchboard/contracts';
import { startStack, type Stack } from '@switchboard/testing';
import { connect, type NatsConnection } from 'nats';
import { Client } from 'pg';

/**
 * A record whose sealed payload no longer opens (a flipped byte in the database: a disk fault, or someone
 * editing rows by hand) must fail the page that holds it with the documented error, never be skipped nor
 * answered as a shorter page that parses; pages without it are still served. The orchestrator opens
 * records with the AES-GCM addon (packages/crypto/native), which must refuse what Node's cipher refuses.
 */

type Listed = { id: string; name: string; filler: string };

describe('GET /records with a record that no longer decrypts', () => {
  let stack: Stack;
  let nango: Nango;
  let db: Client;
  let nc: NatsConnection;
  let caller: Caller;
  const integration = `rec-tamper-${randomUUID().slice(0, 8)}`;
  const connectionId = 'c-1';
  const MODEL = 'Ticket';
  const COUNT = 900;
  const filler = 'x'.repeat(1000);

  const listPage = (limit: number) =>
    nango.listRecords<Listed>({ providerConfigKey: integration, connectionId, model: MODEL, limit });

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
       VALUES ($1, $2, $3, $4, 'tickets', 'base', now()) RETURNING id`,
      [randomUUID(), caller.environmentId, integration, connectionId],
    );
    const runId = randomUUID();
    await db.query(
      `INSERT INTO orchestrator.sync_runs (id, sync_id, status, type, workflow_id, attempts)
       VALUES ($1, $2, 'RUNNING', 'INCREMENTAL', 'records-tampered-e2e', 1)`,
      [runId, sync.rows[0]!.id],
    );
    // Saved as a sync script's batchSave sends them.
    const records = Array.from({ length: COUNT }, (_, i) => ({ id: `t-${i}`, name: `ticket ${i}`, filler }));
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
    expect(JSON.parse(Buffer.from(msg.data).toString('utf8'))).toMatchObject({ response: { ok: true } });
  }, 180_000);

  afterAll(async () => {
    await nc?.close();
    await db?.end();
    await stack?.stop();
  });

  it('answers every record once, intact, before any damage', async () => {
    const page = await listPage(1000);
    expect(page.next_cursor).toBeNull();
    expect(page.records.map((r) => r.id).sort()).toEqual(
      Array.from({ length: COUNT }, (_, i) => `t-${i}`).sort(),
    );
    expect(page.records.every((r) => r.name === `ticket ${r.id.slice(2)}` && r.filler === filler)).toBe(true);
  }, 60_000);

  it('fails the page that holds it with server_error, and serves the pages before it', async () => {
    // Flip one byte of the ciphertext of the 700th record (in page order): its tag no longer matches.
    const { rows } = await db.query<{ id: string }>(
      `SELECT id FROM orchestrator.records WHERE environment_id = $1 AND provider_config_key = $2 AND model = $3
       ORDER BY updated_at, id OFFSET 699 LIMIT 1`,
      [caller.environmentId, integration, MODEL],
    );
    await db.query(
      `UPDATE orchestrator.records SET payload = set_byte(payload, 120, get_byte(payload, 120) # 1) WHERE id = $1`,
      [rows[0]!.id],
    );

    const res = await fetch(`${stack.gatewayUrl}/records?model=${MODEL}&limit=1000`, {
      headers: {
        authorization: `Bearer ${stack.secretKey}`,
        'connection-id': connectionId,
        'provider-config-key': integration,
      },
    });
    expect(res.status).toBe(500);
    const body = await res.text();
    expect(JSON.parse(body)).toMatchObject({ error: { code: 'server_error' } });
    // Nothing of any record is in the answer.
    expect(body).not.toContain('ticket');
    await expect(listPage(1000)).rejects.toMatchObject({ response: { status: 500 } });
    // Pages that end before the damaged record are still served.
    expect((await listPage(600)).records).toHaveLength(600);
  }, 60_000);
});
