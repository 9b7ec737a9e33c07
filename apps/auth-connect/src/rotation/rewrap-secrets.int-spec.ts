import { randomUUID } from 'node:crypto';
import { EnvelopeCipher, MasterKeyring } from '@switchboard/crypto';
import { createPrismaClient, type PrismaClient } from '@switchboard/db';
import { testInfrastructure } from '@switchboard/testing';
import { variableAad } from '../environment-variables/environment-variables.service';
import { secretsAad } from '../integrations/integrations.service';
import { rewrapAuthSecrets } from './rewrap-secrets';

/** Master key rotation of auth-connect's sealed values against a real Postgres. */
describe('rewrapAuthSecrets', () => {
  let db: PrismaClient;
  let accountId: number;
  let environmentId: number;
  const k1 = MasterKeyring.generateKeyMaterial();
  const k2 = MasterKeyring.generateKeyMaterial();
  const before = new EnvelopeCipher(new MasterKeyring(`1:${k1}`));
  const during = new EnvelopeCipher(new MasterKeyring(`1:${k1},2:${k2}`));
  const after = new EnvelopeCipher(new MasterKeyring(`2:${k2}`));
  const integrationIds: number[] = [];

  beforeAll(async () => {
    db = createPrismaClient((await testInfrastructure()).databaseUrl, { poolSize: 4 });
    accountId = (await db.account.create({ data: { name: `rewrap-test-${randomUUID()}` } })).id;
    environmentId = (await db.environment.create({ data: { accountId, name: 'dev' } })).id;
    for (let i = 0; i < 12; i++) {
      const row = await db.integration.create({
        data: { environmentId, uniqueKey: `crm-${i}`, provider: 'hubspot' },
      });
      await db.integration.update({
        where: { id: row.id },
        data: { secrets: before.encryptJson({ client_secret: `secret-${i}` }, secretsAad(row.id)) },
      });
      integrationIds.push(row.id);
    }
    // One without secrets (an API-key integration): nothing to rewrap.
    await db.integration.create({ data: { environmentId, uniqueKey: 'plain', provider: 'github' } });
    await db.environmentVariable.createMany({
      data: Array.from({ length: 5 }, (_, i) => ({
        environmentId,
        name: `VAR_${i}`,
        value: before.encrypt(`value-${i}`, variableAad(environmentId, `VAR_${i}`)),
      })),
    });
  }, 60_000);

  afterAll(async () => {
    await db.account.delete({ where: { id: accountId } });
    await db.$disconnect();
  });

  it('moves every integration secret and variable to the new key, so the old one can be dropped, and is safe to run again', async () => {
    // Scoped to this test's environment: other tests share the tables, under keys of their own.
    const report = await rewrapAuthSecrets(db, during, 2, { batchSize: 5, environmentId });
    expect(report).toEqual({
      currentVersion: 2,
      scanned: 17,
      rewrapped: 17,
      changedConcurrently: 0,
      failed: [],
      remaining: 0,
    });

    for (const [i, id] of integrationIds.entries()) {
      const { secrets } = await db.integration.findUniqueOrThrow({ where: { id } });
      expect(after.versionOf(secrets!)).toBe(2);
      // Readable with the new key alone, under the same associated data.
      expect(after.decryptJson(secrets!, secretsAad(id))).toEqual({ client_secret: `secret-${i}` });
    }
    const variables = await db.environmentVariable.findMany({
      where: { environmentId },
      orderBy: { name: 'asc' },
    });
    expect(variables.map((v) => after.decrypt(v.value, variableAad(environmentId, v.name)))).toEqual([
      'value-0',
      'value-1',
      'value-2',
      'value-3',
      'value-4',
    ]);

    const again = await rewrapAuthSecrets(db, during, 2, { batchSize: 5, environmentId });
    expect(again).toMatchObject({ scanned: 0, rewrapped: 0, failed: [], remaining: 0 });
  });

  it('reports a value no configured key can open, and leaves it as it was', async () => {
    const stranger = new EnvelopeCipher(new MasterKeyring(`1:${MasterKeyring.generateKeyMaterial()}`));
    const row = await db.integration.create({
      data: { environmentId, uniqueKey: `foreign-${randomUUID()}`, provider: 'hubspot' },
    });
    const sealed = stranger.encryptJson({ client_secret: 'x' }, secretsAad(row.id));
    await db.integration.update({ where: { id: row.id }, data: { secrets: sealed } });

    const report = await rewrapAuthSecrets(db, during, 2, { environmentId });
    expect(report.failed).toEqual([`integration:${row.id}`]);
    expect(report.remaining).toBe(1);
    expect((await db.integration.findUniqueOrThrow({ where: { id: row.id } })).secrets).toBe(sealed);
    await db.integration.delete({ where: { id: row.id } });
  });
});
