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
  /** The key already existed and was revoked: it stays revoked (start.sh says so). */
  revoked: boolean;
}

/**
 * Idempotent development seed: one account, its `dev` and `prod` environments, and `secretKey` as a
 * full-scope key of `dev`, created only when absent. A key that already exists is left exactly as it is:
 * re-running `npm start` or the compose seed must never un-revoke a key someone revoked, nor give back
 * scopes someone narrowed (a leaked development key stays dead). A new key is needed to get new scopes.
 */
export async function seedDevelopment(
  db: AuthDb,
  secretKey: string,
  accountName = DEV_ACCOUNT_NAME,
): Promise<SeedResult> {
  // A one-shot command, often run while the services it seeds for are booting on the same cores: Prisma's
  // 5 s default for an interactive transaction expired there under load, failing the whole start.
  return db.$transaction(
    async (tx) => {
      const keyHash = hashApiKey(secretKey);
      const existing = await tx.apiKey.findUnique({ where: { keyHash }, include: { environment: true } });
      if (existing) {
        return {
          accountId: existing.environment.accountId,
          environmentId: existing.environmentId,
          environmentUuid: existing.environment.uuid,
          created: false,
          revoked: existing.revokedAt !== null,
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
        data: {
          environmentId: dev.id,
          displayName: 'Development key (seed)',
          keyHash,
          keySuffix: secretKey.slice(-4),
          scopes: ALL_SCOPES,
        },
      });
      return {
        accountId: account.id,
        environmentId: dev.id,
        environmentUuid: dev.uuid,
        created: true,
        revoked: false,
      };
    },
    { maxWait: 30_000, timeout: 60_000 },
  );
}
