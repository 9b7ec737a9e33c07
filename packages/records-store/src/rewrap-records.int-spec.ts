import { randomInt, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { EnvelopeCipher, MasterKeyring, SHARED_HEADER_BYTES } from '@switchboard/crypto';
import { createPgPool, type PgPool } from '@switchboard/db';
import { testInfrastructure } from '@switchboard/testing';
import { RecordIds, payloadAad, type RecordScope } from './record-keys';
import { RecordsStore } from './records.store';
import type { StoredRecord } from './records.types';
import { rewrapAllRecords } from './rewrap-records';

jest.setTimeout(120_000);

/**
 * Master key rotation of record payloads against a real Postgres: written under key 1, rewrapped with the
 * keyring `1,2`, then read by a store that has key 2 only (key 1 retired).
 */
describe('rewrapAllRecords (Postgres)', () => {
  let pool: PgPool;
  const k1 = MasterKeyring.generateKeyMaterial();
  const k2 = MasterKeyring.generateKeyMaterial();
  const before = new MasterKeyring(`1:${k1}`);
  const during = new MasterKeyring(`1:${k1},2:${k2}`);
  const after = new MasterKeyring(`2:${k2}`);
  const MODEL = 'Contact';
  let n = 0;
  const newScope = (environmentId: number): RecordScope => ({
    environmentId,
    providerConfigKey: 'fake-crm',
    connectionId: `rot-${++n}-${randomUUID()}`,
  });
  const environments: number[] = [];
  const newEnvironment = () => {
    const id = randomInt(1_000_000, 2_000_000_000);
    environments.push(id);
    return id;
  };
  const items = (count: number, tag: string) =>
    Array.from({ length: count }, (_, i) => ({ id: `${tag}-${i}`, name: `item ${i}`, nested: { tag, i } }));
  const rewrap = (environmentId: number, batchSize = 7) =>
    rewrapAllRecords(pool, new EnvelopeCipher(during), during.currentVersion, { batchSize, environmentId });
  /** What a customer reads (payload and metadata), through a store with this keyring. */
  const read = async (keyring: MasterKeyring, scope: RecordScope) =>
    (await new RecordsStore(pool, keyring).list(scope, MODEL, { limit: 10_000 })).records;
  const payloads = async (environmentId: number) =>
    (
      await pool.query<{ id: string; payload: Buffer }>(
        'SELECT id::text, payload FROM orchestrator.records WHERE environment_id = $1 ORDER BY id',
        [environmentId],
      )
    ).rows;
  const distinctHeaders = async (environmentId: number) =>
    new Set(
      (await payloads(environmentId)).map((r) => r.payload.subarray(0, SHARED_HEADER_BYTES).toString('hex')),
    ).size;
  const versions = async (environmentId: number) =>
    new Set((await payloads(environmentId)).map((r) => new EnvelopeCipher(during).versionOf(r.payload)));
  const plain = (records: StoredRecord[]) =>
    records
      .map(({ _nango_metadata: meta, ...record }) => ({ record, modified: meta.last_modified_at }))
      .sort((a, b) => a.record.id.localeCompare(b.record.id));

  beforeAll(async () => {
    pool = createPgPool((await testInfrastructure()).databaseUrl, { poolSize: 6 });
  });

  afterAll(async () => {
    await pool.query('DELETE FROM orchestrator.records WHERE environment_id = ANY($1::int[])', [
      environments,
    ]);
    await pool.query('DELETE FROM orchestrator.record_counts WHERE environment_id = ANY($1::int[])', [
      environments,
    ]);
    await pool.end();
  });

  it('moves every record to the new key, one new header per old one, and only in the given environment', async () => {
    const env = newEnvironment();
    const other = newEnvironment();
    const writer = new RecordsStore(pool, before);
    // Chunks of 1000 share a key: 3 headers for this connection, 1 for each of the others.
    const big = newScope(env);
    const small = [newScope(env), newScope(env)];
    await writer.write(big, MODEL, items(2100, 'big'), 'save', randomUUID());
    for (const scope of small) await writer.write(scope, MODEL, items(30, 'small'), 'save', randomUUID());
    const elsewhere = newScope(other);
    await writer.write(elsewhere, MODEL, items(20, 'other'), 'save', randomUUID());
    const scopes = [big, ...small];
    const written = await Promise.all(scopes.map(async (s) => plain(await read(before, s))));
    expect(written[0]!.map((r) => r.record)).toEqual(
      items(2100, 'big').sort((a, b) => a.id.localeCompare(b.id)),
    );
    const untouched = await payloads(other);
    expect(await distinctHeaders(env)).toBe(5);

    const report = await rewrap(env);
    expect(report).toEqual({
      currentVersion: 2,
      scanned: 2160,
      rewrapped: 2160,
      changedConcurrently: 0,
      failed: [],
      remaining: 0,
    });

    // Key 1 retired: every record reads as written, metadata (cursors) included.
    for (const [i, scope] of scopes.entries()) expect(plain(await read(after, scope))).toEqual(written[i]);
    expect(await versions(env)).toEqual(new Set([2]));
    // Records that shared a data key still share one (readers unwrap one key per chunk, not per record).
    expect(await distinctHeaders(env)).toBe(5);
    // Another environment is left as it was.
    expect(await payloads(other)).toEqual(untouched);
    expect(await versions(other)).toEqual(new Set([1]));

    expect(await rewrap(env)).toMatchObject({ scanned: 0, rewrapped: 0, failed: [], remaining: 0 });
  });

  it('leaves alone a record a sync rewrote meanwhile, and waits out a write that holds a record', async () => {
    const env = newEnvironment();
    const scope = newScope(env);
    await new RecordsStore(pool, before).write(scope, MODEL, items(40, 'race'), 'save', randomUUID());
    const held = new RecordIds(scope, MODEL).of('race-20');

    // A replica on the new keyring saves a record after the rewrap read it and before the rewrap writes.
    let raced = false;
    const racing = {
      query: async (text: string, values: unknown[]) => {
        if (!raced && text.includes('UPDATE')) {
          raced = true;
          await new RecordsStore(pool, during).write(
            scope,
            MODEL,
            [{ id: 'race-3', name: 'changed by a sync' }],
            'save',
            randomUUID(),
          );
        }
        return pool.query(text, values);
      },
    } as unknown as PgPool;
    // Another record is locked by a write's transaction for a moment.
    const holder = await pool.connect();
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM orchestrator.records WHERE id = $1 FOR UPDATE', [held]);
    const released = sleep(150).then(() => holder.query('COMMIT'));

    const report = await rewrapAllRecords(racing, new EnvelopeCipher(during), 2, {
      batchSize: 100,
      environmentId: env,
    });
    await released;
    holder.release();

    expect(raced).toBe(true);
    expect(report).toMatchObject({
      scanned: 40,
      rewrapped: 39,
      changedConcurrently: 1,
      failed: [],
      remaining: 0,
    });
    const records = await read(after, scope);
    expect(records).toHaveLength(40);
    expect(records.find((r) => r.id === 'race-3')).toMatchObject({ name: 'changed by a sync' });
    expect(records.find((r) => r.id === 'race-20')).toMatchObject({ name: 'item 20' });
  });

  it('reports a record no key opens and rotates the rest, legacy text envelopes included', async () => {
    const env = newEnvironment();
    const scope = newScope(env);
    const records = items(25, 'mixed');
    await new RecordsStore(pool, before).write(scope, MODEL, records, 'save', randomUUID());
    const ids = new RecordIds(scope, MODEL);
    const cipher = new EnvelopeCipher(before);
    // Rows written before payloads were binary: a text envelope's bytes (shared key and per-value key).
    const legacy = [
      {
        id: ids.of('mixed-1'),
        text: cipher.sharedKey().seal(JSON.stringify(records[1]), payloadAad(ids.of('mixed-1'))),
      },
      {
        id: ids.of('mixed-2'),
        text: cipher.encrypt(JSON.stringify(records[2]), payloadAad(ids.of('mixed-2'))),
      },
    ];
    for (const row of legacy)
      await pool.query('UPDATE orchestrator.records SET payload = $2 WHERE id = $1', [
        row.id,
        Buffer.from(row.text),
      ]);
    // A tampered wrapped key: its header opens with no key.
    const broken = ids.of('mixed-5');
    await pool.query(
      'UPDATE orchestrator.records SET payload = set_byte(payload, 20, get_byte(payload, 20) # 1) WHERE id = $1',
      [broken],
    );

    const report = await rewrap(env);
    expect(report).toMatchObject({
      scanned: 25,
      rewrapped: 24,
      changedConcurrently: 0,
      failed: [broken],
      remaining: 1,
    });

    // The readable ones read with key 2 alone (the broken one is left out of the page by deleting it).
    const stored = await payloads(env);
    expect(
      stored
        .filter((r) => r.payload[0] === 0x73)
        .map((r) => r.id)
        .sort(),
    ).toEqual(legacy.map((l) => l.id).sort());
    await pool.query('DELETE FROM orchestrator.records WHERE id = $1', [broken]);
    const read2 = await read(after, scope);
    expect(read2.map(({ _nango_metadata: _m, ...r }) => r).sort((a, b) => a.id.localeCompare(b.id))).toEqual(
      records.filter((r) => r.id !== 'mixed-5').sort((a, b) => a.id.localeCompare(b.id)),
    );
  });
});
