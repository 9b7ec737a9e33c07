import { Global, Module } from '@nestjs/common';
import { EnvelopeCipher, MasterKeyring } from '@switchboard/crypto';
import { createPrismaClient, type RelayDb } from '@switchboard/db';
import { databaseLifecycle } from '@switchboard/service-kit';
import { WEBHOOK_RELAY_ENV, type WebhookRelayEnv } from '../config/env';

export const RELAY_DB = Symbol('RELAY_DB');

/** The relay schema's client and the cipher for the signing keys stored in it. */
@Global()
@Module({
  providers: [
    {
      provide: RELAY_DB,
      inject: [WEBHOOK_RELAY_ENV],
      useFactory: (env: WebhookRelayEnv): RelayDb =>
        createPrismaClient(env.DATABASE_URL, {
          poolSize: Math.min(20, env.SWITCHBOARD_WEBHOOK_CONCURRENCY + 4),
        }),
    },
    {
      provide: EnvelopeCipher,
      inject: [WEBHOOK_RELAY_ENV],
      useFactory: (env: WebhookRelayEnv) =>
        new EnvelopeCipher(new MasterKeyring(env.SWITCHBOARD_MASTER_KEYS)),
    },
    databaseLifecycle(RELAY_DB),
  ],
  exports: [RELAY_DB, EnvelopeCipher],
})
export class DatabaseModule {}
