import { Global, Module } from '@nestjs/common';
import { EnvelopeCipher, MasterKeyring } from '@switchboard/crypto';
import { createPrismaClient, type VaultDb } from '@switchboard/db';
import { databaseLifecycle } from '@switchboard/service-kit';
import { VAULT_ENV, type VaultEnv } from '../config/env';

export const VAULT_DB = Symbol('VAULT_DB');

/** The vault schema's client and the cipher for connection credentials. */
@Global()
@Module({
  providers: [
    {
      provide: VAULT_DB,
      inject: [VAULT_ENV],
      useFactory: (env: VaultEnv): VaultDb => createPrismaClient(env.DATABASE_URL),
    },
    {
      provide: EnvelopeCipher,
      inject: [VAULT_ENV],
      useFactory: (env: VaultEnv) => new EnvelopeCipher(new MasterKeyring(env.SWITCHBOARD_MASTER_KEYS)),
    },
    databaseLifecycle(VAULT_DB),
  ],
  exports: [VAULT_DB, EnvelopeCipher],
})
export class DatabaseModule {}
