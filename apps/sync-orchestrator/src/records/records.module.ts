import { Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import { MasterKeyring } from '@switchboard/crypto';
import { createPgPool, type PgPool } from '@switchboard/db';
import { ORCHESTRATOR_ENV, type OrchestratorEnv } from '../config/env';
import { KnownConnectionsModule } from '../connections/known-connections';
import { RecordsHandlers } from './records.handlers';
import { RecordsStore } from '@switchboard/records-store';

/** The records store's own node-postgres pool (it does not go through Prisma). */
export const RECORDS_PG_POOL = Symbol('RECORDS_PG_POOL');

/** The records store (a plain class the worker also builds itself) and the records subjects. */
@Module({
  imports: [KnownConnectionsModule],
  controllers: [RecordsHandlers],
  providers: [
    {
      provide: RECORDS_PG_POOL,
      inject: [ORCHESTRATOR_ENV],
      useFactory: (env: OrchestratorEnv): PgPool =>
        createPgPool(env.DATABASE_URL, { poolSize: env.SWITCHBOARD_RECORDS_DB_POOL_SIZE }),
    },
    {
      provide: RecordsStore,
      inject: [RECORDS_PG_POOL, ORCHESTRATOR_ENV],
      useFactory: (pool: PgPool, env: OrchestratorEnv) =>
        new RecordsStore(pool, new MasterKeyring(env.SWITCHBOARD_MASTER_KEYS)),
    },
  ],
  exports: [RecordsStore],
})
export class RecordsModule implements OnApplicationShutdown {
  constructor(@Inject(RECORDS_PG_POOL) private readonly pool: PgPool) {}

  /** At the same point as the Prisma client's pool (databaseLifecycle): after the handlers have stopped. */
  async onApplicationShutdown(): Promise<void> {
    await this.pool.end();
  }
}
