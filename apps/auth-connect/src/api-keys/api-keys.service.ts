import { Inject, Injectable } from '@nestjs/common';
import {
  isScope,
  type Caller,
  type CreateApiKeyBody,
  type CreatedApiKey,
  type ListedApiKey,
  type Scope,
  type VerifiedKey,
} from '@switchboard/contracts';
import type { AuthDb } from '@switchboard/db';
import { AuthConnectError } from '../auth-connect.errors';
import { AUTH_DB } from '../database/database.module';
import { generateApiKey, hashApiKey } from './api-key-hash';

const KEY_MANAGER_SCOPE: Scope = 'environment:api_keys:write';

@Injectable()
export class ApiKeysService {
  constructor(@Inject(AUTH_DB) private readonly db: AuthDb) {}

  async verify(keyHash: string): Promise<VerifiedKey> {
    const key = await this.db.apiKey.findUnique({
      where: { keyHash },
      include: { environment: true },
    });
    if (!key || key.revokedAt)
      throw new AuthConnectError('unknown_account', 'No environment matches this secret key');
    return {
      accountId: key.environment.accountId,
      environmentId: key.environmentId,
      environmentUuid: key.environment.uuid,
      environmentName: key.environment.name,
      keyId: key.id,
      // A scope removed from the code base is dropped rather than trusted.
      scopes: key.scopes.filter(isScope),
    };
  }

  async create(caller: Caller, body: CreateApiKeyBody): Promise<CreatedApiKey> {
    const secret = generateApiKey();
    const row = await this.db.apiKey.create({
      data: {
        environmentId: caller.environmentId,
        displayName: body.display_name,
        keyHash: hashApiKey(secret),
        keySuffix: secret.slice(-4),
        scopes: [...new Set(body.scopes)],
      },
    });
    return {
      id: row.id,
      display_name: row.displayName,
      scopes: row.scopes as Scope[],
      secret_key: secret,
      created_at: row.createdAt.toISOString(),
    };
  }

  /** The environment's active keys, oldest first, without their secrets (only hashes are stored anyway). */
  async list(caller: Caller): Promise<{ api_keys: ListedApiKey[] }> {
    const rows = await this.db.apiKey.findMany({
      where: { environmentId: caller.environmentId, revokedAt: null },
      orderBy: { id: 'asc' },
    });
    return {
      api_keys: rows.map((row) => ({
        id: row.id,
        name: row.displayName,
        scopes: row.scopes.filter(isScope),
        created_at: row.createdAt.toISOString(),
        key_suffix: row.keySuffix,
      })),
    };
  }

  /**
   * Revokes a key of the caller's environment. The caller must hold every scope of the key it revokes
   * (the rule for creating one), so a narrow key cannot take out a broader one; and the environment's
   * last key able to manage keys is kept, or nobody could create or revoke keys any more. Revocations in
   * one environment run one at a time (the environment row is locked), so two concurrent revocations
   * cannot each leave the other as "the last one".
   */
  async revoke(caller: Caller, callerScopes: Scope[], id: number): Promise<{ success: true }> {
    return this.db.$transaction(async (tx) => {
      await tx.$queryRaw`SELECT id FROM auth.environments WHERE id = ${caller.environmentId} FOR UPDATE`;
      const key = await tx.apiKey.findFirst({
        where: { id, environmentId: caller.environmentId, revokedAt: null },
      });
      if (!key) throw new AuthConnectError('not_found', `No active API key ${id} in this environment`);
      const beyond = key.scopes.filter((scope) => !callerScopes.includes(scope as Scope));
      if (beyond.length > 0)
        throw new AuthConnectError(
          'forbidden',
          `Insufficient scope. Revoking this key requires: ${beyond.join(', ')}`,
        );
      if (key.scopes.includes(KEY_MANAGER_SCOPE)) {
        const managers = await tx.apiKey.count({
          where: {
            environmentId: caller.environmentId,
            revokedAt: null,
            scopes: { has: KEY_MANAGER_SCOPE },
            id: { not: id },
          },
        });
        if (managers === 0) {
          throw new AuthConnectError(
            'conflict',
            `This is the environment's last key with ${KEY_MANAGER_SCOPE}; create another one before revoking it`,
          );
        }
      }
      await tx.apiKey.update({ where: { id }, data: { revokedAt: new Date() } });
      return { success: true as const };
    });
  }
}
