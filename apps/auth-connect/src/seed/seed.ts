import { ALL_SCOPES } from '@switchboard/contracts';
import type { AuthDb } from '@switchboard/db';
import { hashApiKey } from '../api-keys/api-key-hash';

export const DEV_ACCOUNT_NAME = 'Development';
export const SEEDED_ENVIRONMENTS = ['dev', 'prod'] as const;

export interface SeedResult {
  accountId: number;
  environmentId: number;
  environmentUuid: string;
  created: boolean;
}

/**
 * Idempotent development seed: one account, its `dev` and `prod` environments, and `secretKey` as a
 * full-scope key of `dev`. Running it again changes nothing; a key that already exists keeps its row.
 */
export async function seedDevelopment(
  db: AuthDb,
  secretKey: string,
  accountName = DEV_ACCOUNT_NAME,
): Promise<SeedResult> {
  return db.$transaction(async (tx) => {
    const keyHash = hashApiKey(secretKey);
    const existing = await tx.apiKey.findUnique({ where: { keyHash }, include: { environment: true } });
    if (existing) {
      // Scopes added to the code base since the first seed are granted to the development key.
      await tx.apiKey.update({ where: { id: existing.id }, data: { scopes: ALL_SCOPES, revokedAt: null } });
      return {
        accountId: existing.environment.accountId,
        environmentId: existing.environmentId,
        environmentUuid: existing.environment.uuid,
        created: false,
      };
    }
    const account =
      (await tx.account.findFirst({ where: { name: accountName }, orderBy: { id: 'asc' } })) ??
      (await tx.account.create({ data: { name: accountName } }));
    const environments = [];
    for (const name of SEEDED_ENVIRONMENTS) {
      environments.push(
        await tx.environment.upsert({
          where: { accountId_name: { accountId: account.id, name } },
          create: { accountId: account.id, name },
          update: {},
        }),
      );
    }
    const dev = environments[0]!;
    await tx.apiKey.create({
      data: { environmentId: dev.id, displayName: 'Development key (seed)', keyHash, scopes: ALL_SCOPES },
    });
    return { accountId: account.id, environmentId: dev.id, environmentUuid: dev.uuid, created: true };
  });
}
