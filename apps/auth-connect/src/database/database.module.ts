import { Global, Module } from '@nestjs/common';
import { EnvelopeCipher, MasterKeyring } from '@switchboard/crypto';
import { createPrismaClient, type AuthDb } from '@switchboard/db';
import { databaseLifecycle } from '@switchboard/service-kit';
import { AUTH_CONNECT_ENV, type AuthConnectEnv } from '../config/env';

export const AUTH_DB = Symbol('AUTH_DB');

/** The auth schema's client and the cipher for the secrets stored in it. */
@Global()
@Module({
  providers: [
    {
      provide: AUTH_DB,
      inject: [AUTH_CONNECT_ENV],
      useFactory: (env: AuthConnectEnv): AuthDb => createPrismaClient(env.DATABASE_URL),
    },
    {
      provide: EnvelopeCipher,
      inject: [AUTH_CONNECT_ENV],
      useFactory: (env: AuthConnectEnv) => new EnvelopeCipher(new MasterKeyring(env.SWITCHBOARD_MASTER_KEYS)),
    },
    databaseLifecycle(AUTH_DB),
  ],
  exports: [AUTH_DB, EnvelopeCipher],
})
export class DatabaseModule {}
