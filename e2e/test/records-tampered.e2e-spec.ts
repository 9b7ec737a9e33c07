import { randomUUID } from 'node:crypto';
import { Nango } from '@nangohq/node';
import type { Stack } from '@switchboard/testing';
import { call } from './support/http';
import { openRecordsRun, type RecordsRun } from './support/records-run';
import { standardStack } from './support/standard-stack';

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
  let run: RecordsRun;
  const integration = `rec-tamper-${randomUUID().slice(0, 8)}`;
  const connectionId = 'c-1';
  const MODEL = 'Ticket';
  const COUNT = 900;
  const filler = 'x'.repeat(1000);

  const listPage = (limit: number) =>
    nango.listRecords<Listed>({ providerConfigKey: integration, connectionId, model: MODEL, limit });

  beforeAll(async () => {
    stack = await standardStack();
    nango = new Nango({ secretKey: stack.secretKey, host: stack.gatewayUrl });
    run = await openRecordsRun(stack, nango, { integration, connectionId, syncName: 'tickets' });
    await run.save(
      MODEL,
      Array.from({ length: COUNT }, (_, i) => ({ id: `t-${i}`, name: `ticket ${i}`, filler })),
    );
  }, 180_000);

  afterAll(async () => {
    await run?.close();
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
    const { rows } = await run.db.query<{ id: string }>(
      `SELECT id FROM orchestrator.records WHERE environment_id = $1 AND provider_config_key = $2 AND model = $3
       ORDER BY updated_at, id OFFSET 699 LIMIT 1`,
      [run.caller.environmentId, integration, MODEL],
    );
    await run.db.query(
      `UPDATE orchestrator.records SET payload = set_byte(payload, 120, get_byte(payload, 120) # 1) WHERE id = $1`,
      [rows[0]!.id],
    );

    const res = await call(stack.gatewayUrl, 'GET', `/records?model=${MODEL}&limit=1000`, {
      key: stack.secretKey,
      headers: { 'connection-id': connectionId, 'provider-config-key': integration },
    });
    expect(res.status).toBe(500);
    expect(res.body).toMatchObject({ error: { code: 'server_error' } });
    // Nothing of any record is in the answer.
    expect(res.text).not.toContain('ticket');
    await expect(listPage(1000)).rejects.toMatchObject({ response: { status: 500 } });
    // Pages that end before the damaged record are still served.
    expect((await listPage(600)).records).toHaveLength(600);
  }, 60_000);
});
