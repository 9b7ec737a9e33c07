import { Inject, Injectable } from '@nestjs/common';
import { isScope, type Caller, type CreateApiKeyBody, type CreatedApiKey, type Scope, type VerifiedKey } from '@switchboard/contracts';
import type { AuthDb } from '@switchboard/db';
import { AuthConnectError } from '../auth-connect.errors';
import { AUTH_DB } from '../database/database.module';
import { generateApiKey, hashApiKey } from './api-key-hash';

@Injectable()
export class ApiKeysService {
  constructor(@Inject(AUTH_DB) private readonly db: AuthDb) {}

  async verify(keyHash: string): Promise<VerifiedKey> {
    const key = await this.db.apiKey.findUnique({
      where: { keyHash },
      include: { environment: true },
    });
    if (!key || key.revokedAt) throw new AuthConnectError('unknown_account', 'No environment matches this secret key');
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

  async revoke(caller: Caller, id: number): Promise<{ success: true }> {
    const { count } = await this.db.apiKey.updateMany({
      where: { id, environmentId: caller.environmentId, revokedAt: null },
      data: { revokedAt: new Date() },
    });
    if (count === 0) throw new AuthConnectError('not_found', `No active API key ${id} in this environment`);
    return { success: true };
  }
}
