import { randomUUID } from 'node:crypto';
import { ALL_SCOPES } from '@switchboard/contracts';
import { createPrismaClient, type PrismaClient } from '@switchboard/db';
import { testInfrastructure } from '@switchboard/testing';
import { hashApiKey } from '../api-keys/api-key-hash';
import { seedDevelopment } from './seed';

/** The development seed against a real Postgres, as `npm start` and the compose seed run it on every start. */
describe('seedDevelopment', () => {
  let db: PrismaClient;
  const accountName = `seed-test-${randomUUID()}`;

  beforeAll(async () => {
    db = createPrismaClient((await testInfrastructure()).databaseUrl, { poolSize: 2 });
  });

  afterAll(async () => {
    await db.account.deleteMany({ where: { name: accountName } });
    await db.$disconnect();
  });

  it('creates the key once; a later run leaves a revoked, narrowed key revoked and narrowed', async () => {
    const secretKey = randomUUID();
    const first = await seedDevelopment(db, secretKey, accountName);
    expect(first).toMatchObject({ created: true, revoked: false });
    const keyHash = hashApiKey(secretKey);
    const created = await db.apiKey.findUniqueOrThrow({ where: { keyHash } });
    expect(created.scopes).toEqual(ALL_SCOPES);

    // The operator revokes the leaked development key and narrows it.
    const revokedAt = new Date();
    await db.apiKey.update({ where: { keyHash }, data: { revokedAt, scopes: ['environment:proxy'] } });

    const again = await seedDevelopment(db, secretKey, accountName);
    expect(again).toEqual({ ...first, created: false, revoked: true });
    const after = await db.apiKey.findUniqueOrThrow({ where: { keyHash } });
    expect(after.revokedAt).toEqual(revokedAt);
    expect(after.scopes).toEqual(['environment:proxy']);
    expect(await db.apiKey.count({ where: { environmentId: first.environmentId } })).toBe(1);
  });
});
