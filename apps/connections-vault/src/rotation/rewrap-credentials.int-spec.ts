import { randomInt, randomUUID } from 'node:crypto';
import { EnvelopeCipher, MasterKeyring } from '@switchboard/crypto';
import { createPrismaClient, type PrismaClient } from '@switchboard/db';
import { testInfrastructure } from '@switchboard/testing';
import { ConnectionsRepository } from '../connections/connections.repository';
import { CredentialsCipher } from '../credentials/credentials-cipher';
import { authEvent } from '../events/auth-event';
import { rewrapAllCredentials } from './rewrap-credentials';

/** Master key rotation against a real Postgres, with writers racing the rewrap. */
describe('rewrapAllCredentials', () => {
  let db: PrismaClient;
  let repository: ConnectionsRepository;
  const environmentId = randomInt(1_000_000, 2_000_000_000);
  const k1 = MasterKeyring.generateKeyMaterial();
  const k2 = MasterKeyring.generateKeyMaterial();
  const before = new EnvelopeCipher(new MasterKeyring(`1:${k1}`));
  const during = new EnvelopeCipher(new MasterKeyring(`1:${k1},2:${k2}`));
  const after = new EnvelopeCipher(new MasterKeyring(`2:${k2}`));
  const ROWS = 300;

  beforeAll(async () => {
    db = createPrismaClient((await testInfrastructure()).databaseUrl, { poolSize: 10 });
    repository = new ConnectionsRepository(db);
    const cipher = new CredentialsCipher(before);
    for (let i = 0; i < ROWS; i++) {
      await repository.upsert(
        { environmentId, providerConfigKey: 'github', connectionId: `rot-${i}` },
        {
          provider: 'github',
          sealCredentials: (id) => cipher.seal(id, { type: 'OAUTH2', access_token: `at-${i}-v0` }),
          credentialsExpiresAt: null,
          connectionConfig: {},
          tags: {},
        },
        (row, operation) => authEvent(row, `test-${randomUUID()}`, operation),
      );
    }
    await db.outboxEvent.deleteMany({
      where: { payload: { path: ['environmentId'], equals: environmentId } },
    });
  }, 120_000);

  afterAll(async () => {
    await db.connection.deleteMany({ where: { environmentId } });
    await db.$disconnect();
  });

  it('moves every row to the new key while writers keep changing rows, losing none of their writes', async () => {
    const rows = await db.connection.findMany({ where: { environmentId }, orderBy: { id: 'asc' } });
    const writer = new CredentialsCipher(during);
    const written = new Map<number, string>();
    let stop = false;

    // Replicas already on the new keyring keep refreshing tokens (compare-and-set, as the vault does).
    const writers = Array.from({ length: 4 }, async (_, w) => {
      let n = 0;
      while (!stop) {
        const row = rows[(w * 37 + n * 11) % rows.length]!;
        n++;
        const current = await repository.credentialsOf(row.id);
        if (!current) continue;
        const token = `at-${row.id}-w${w}-${n}`;
        const next = writer.seal(row.id, { type: 'OAUTH2', access_token: token });
        if ((await repository.swapCiphertexts([{ id: row.id, from: current, to: next }])).length === 1)
          written.set(row.id, token);
      }
    });

    const report = await rewrapAllCredentials(repository, during, 2, { batchSize: 25, environmentId });
    stop = true;
    await Promise.all(writers);

    expect(report).toMatchObject({ currentVersion: 2, failed: [], remaining: 0 });
    expect(report.scanned).toBeGreaterThan(0);
    expect(written.size).toBeGreaterThan(0);

    // With the old key gone, every row still decrypts, and the last write to each row survived.
    const reader = new CredentialsCipher(after);
    const final = await db.connection.findMany({ where: { environmentId }, orderBy: { id: 'asc' } });
    for (const [index, row] of final.entries()) {
      expect(during.versionOf(row.credentials!)).toBe(2);
      const expected = written.get(row.id) ?? `at-${index}-v0`;
      expect(reader.open(row.id, row.credentials!)).toEqual({ type: 'OAUTH2', access_token: expected });
    }
  }, 120_000);

  it('finds nothing to do when run again', async () => {
    const report = await rewrapAllCredentials(repository, during, 2, { environmentId });
    expect(report).toEqual({
      currentVersion: 2,
      scanned: 0,
      rewrapped: 0,
      changedConcurrently: 0,
      failed: [],
      remaining: 0,
    });
  });

  it('reports rows it cannot decrypt instead of corrupting them', async () => {
    const row = (await db.connection.findFirst({ where: { environmentId } }))!;
    const foreign = new CredentialsCipher(
      new EnvelopeCipher(new MasterKeyring(`1:${MasterKeyring.generateKeyMaterial()}`)),
    ).seal(row.id, { type: 'X' });
    await db.connection.update({ where: { id: row.id }, data: { credentials: foreign } });
    const report = await rewrapAllCredentials(repository, during, 2, { environmentId });
    expect(report).toMatchObject({ failed: [row.id], remaining: 1, rewrapped: 0 });
    expect(await repository.credentialsOf(row.id)).toBe(foreign);
  });
});
