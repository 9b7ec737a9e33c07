import { Inject, Injectable } from '@nestjs/common';
import type { Caller, EnvironmentVariable } from '@switchboard/contracts';
import { EnvelopeCipher } from '@switchboard/crypto';
import type { AuthDb } from '@switchboard/db';
import { AUTH_DB } from '../database/database.module';

/** The associated data of a sealed variable value (also used when it is rewrapped). */
export const variableAad = (environmentId: number, name: string) =>
  `auth.environment_variables:${environmentId}:${name}`;

/** Environment variables are often secrets (API tokens for functions), so values are encrypted at rest. */
@Injectable()
export class EnvironmentVariablesService {
  constructor(
    @Inject(AUTH_DB) private readonly db: AuthDb,
    private readonly cipher: EnvelopeCipher,
  ) {}

  async list(caller: Caller): Promise<EnvironmentVariable[]> {
    const rows = await this.db.environmentVariable.findMany({
      where: { environmentId: caller.environmentId },
      orderBy: { name: 'asc' },
    });
    return rows.map((r) => ({
      name: r.name,
      value: this.cipher.decrypt(r.value, variableAad(r.environmentId, r.name)),
    }));
  }

  async replace(caller: Caller, variables: EnvironmentVariable[]): Promise<EnvironmentVariable[]> {
    const environmentId = caller.environmentId;
    await this.db.$transaction([
      this.db.environmentVariable.deleteMany({ where: { environmentId } }),
      this.db.environmentVariable.createMany({
        data: variables.map((v) => ({
          environmentId,
          name: v.name,
          value: this.cipher.encrypt(v.value, variableAad(environmentId, v.name)),
        })),
      }),
    ]);
    return this.list(caller);
  }
}
