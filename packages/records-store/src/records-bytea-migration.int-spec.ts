import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EnvelopeCipher, MasterKeyring } from '@switchboard/crypto';
import { createPgPool, type PgPool } from '@switchboard/db';
import { repoRoot, testInfrastructure } from '@switchboard/testing';
import { RecordIds, dataHash, externalIdOf, payloadAad } from './record-keys';
import { RecordsStore } from './records.store';

jest.setTimeout(120_000);

/** The migration that made records payloads bytea. */
const MIGRATION = '20261126070000_orchestrator_records_bytea';

/**
 * Records written before payloads were bytea (text envelopes) still read after the migration: a scratch
 * database gets the migrations before it, rows sealed as text, then the migration, then the store reads them.
 */
describe('records payload bytea migration (Postgres)', () => {
  const migrations = join(repoRoot(), 'packages/db/prisma/migrations');
  const folders = readdirSync(migrations, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  const apply = (pool: PgPool, folder: string) =>
    pool.query(readFileSync(join(migrations, folder, 'migration.sql'), 'utf8'));
  const name = `records_bytea_${randomUUID().replaceAll('-', '')}`;
  let admin: PgPool;
  let pool: PgPool;

  beforeAll(async () => {
    const url = new URL((await testInfrastructure()).databaseUrl);
    admin = createPgPool(url.toString(), { poolSize: 1 });
    await admin.query(`CREATE DATABASE "${name}"`);
    url.pathname = `/${name}`;
    pool = createPgPool(url.toString(), { poolSize: 2 });
  });

  afterAll(async () => {
    await pool?.end();
    await admin?.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin?.end();
  });

  it('converts text envelopes to the binary form, keeps any other value readable, and the store reads both', async () => {
    expect(folders).toContain(MIGRATION);
    // Each migration's SQL, in order, as prisma migrate deploy applies them: those before this one first.
    for (const folder of folders.filter((f) => f < MIGRATION)) await apply(pool, folder);

    const keyring = new MasterKeyring(`1:${MasterKeyring.generateKeyMaterial()}`);
    const cipher = new EnvelopeCipher(keyring);
    const scope = { environmentId: 7, providerConfigKey: 'fake-crm', connectionId: 'conn-1' };
    const ids = new RecordIds(scope, 'Contact');
    const batch = cipher.sharedKey();
    const records = [
      // As the store wrote them before: one shared key per chunk, text envelopes.
      { id: 'a', name: 'Ada', note: 'é漢字🙂' },
      { id: 'b', name: 'Bob' },
      // A value in another format (the per-value `sb1` envelope): kept as it is, still readable.
      { id: 'c', name: 'Cy' },
    ].map((record, i) => {
      const id = ids.of(externalIdOf(record.id));
      const json = JSON.stringify(record);
      const payload = i < 2 ? batch.seal(json, payloadAad(id)) : cipher.encrypt(json, payloadAad(id));
      return { id, json, payload };
    });
    // And a pruned record (no payload).
    const pruned = ids.of('d');
    for (const r of records)
      await pool.query(
        `INSERT INTO orchestrator.records (id, environment_id, provider_config_key, connection_id, model,
          external_id, data_hash, payload, size_bytes, created_at, updated_at)
        VALUES ($1, 7, 'fake-crm', 'conn-1', 'Contact', $2, $3, $4, $5, now(), now())`,
        [r.id, JSON.parse(r.json).id, dataHash(r.json), r.payload, Buffer.byteLength(r.json)],
      );
    await pool.query(
      `INSERT INTO orchestrator.records (id, environment_id, provider_config_key, connection_id, model,
        external_id, data_hash, payload, size_bytes, created_at, updated_at, pruned_at)
      VALUES ($1, 7, 'fake-crm', 'conn-1', 'Contact', 'd', 'x', NULL, 0, now(), now(), now())`,
      [pruned],
    );

    await apply(pool, MIGRATION);
    for (const folder of folders.filter((f) => f > MIGRATION)) await apply(pool, folder);

    const { rows } = await pool.query<{ id: string; payload: Buffer | null }>(
      'SELECT id::text, payload FROM orchestrator.records',
    );
    const stored = new Map(rows.map((r) => [r.id, r.payload]));
    for (const [i, r] of records.entries()) {
      const payload = stored.get(r.id)!;
      if (i < 2) {
        // The binary form: format byte, version 1, then the text's parts as bytes (93-byte header).
        expect([...payload.subarray(0, 5)]).toEqual([2, 0, 0, 0, 1]);
        expect(payload.length).toBe(93 + Buffer.byteLength(r.json));
      } else {
        expect(payload.toString('utf8')).toBe(r.payload);
      }
      expect(cipher.decrypt(payload, payloadAad(r.id))).toBe(r.json);
    }
    expect(stored.get(pruned)).toBeNull();

    // Through the store, with a fresh cipher (no shared key cached).
    const store = new RecordsStore(pool, keyring);
    const page = await store.list(scope, 'Contact', { limit: 10 });
    expect(page.records.map(({ _nango_metadata: _meta, ...record }) => record)).toEqual(
      expect.arrayContaining([
        { id: 'a', name: 'Ada', note: 'é漢字🙂' },
        { id: 'b', name: 'Bob' },
        { id: 'c', name: 'Cy' },
        { id: 'd' },
      ]),
    );
    expect(page.records).toHaveLength(4);
    const json = await store.listJson(scope, 'Contact', { limit: 10 });
    expect(JSON.parse(`[${json.recordsJson.join('')}]`)).toEqual(page.records);

    // batchUpdate merges into a converted row and into a kept one; both are then written in binary.
    const run = randomUUID();
    const updated = await store.write(
      scope,
      'Contact',
      [
        { id: 'a', age: 36 },
        { id: 'c', age: 40 },
      ],
      'update',
      run,
    );
    expect(updated).toMatchObject({ updated: 2, unchanged: 0 });
    const after = await store.list(scope, 'Contact', { limit: 10, externalIds: ['a', 'c'] });
    expect(after.records.map(({ _nango_metadata: _meta, ...record }) => record)).toEqual(
      expect.arrayContaining([
        { id: 'a', name: 'Ada', note: 'é漢字🙂', age: 36 },
        { id: 'c', name: 'Cy', age: 40 },
      ]),
    );
  });
});
