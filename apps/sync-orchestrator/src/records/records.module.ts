import { Module } from '@nestjs/common';
import { MasterKeyring } from '@switchboard/crypto';
import type { OrchestratorDb } from '@switchboard/db';
import { ORCHESTRATOR_ENV, type OrchestratorEnv } from '../config/env';
import { ORCHESTRATOR_DB } from '../database/database.module';
import { RecordsHandlers } from './records.handlers';
import { RecordsStore } from './records.store';

/** The records store (a plain class the worker also builds itself) and the records subjects. */
@Module({
  controllers: [RecordsHandlers],
  providers: [
    {
      provide: RecordsStore,
      inject: [ORCHESTRATOR_DB, ORCHESTRATOR_ENV],
      useFactory: (db: OrchestratorDb, env: OrchestratorEnv) =>
        new RecordsStore(db, new MasterKeyring(env.SWITCHBOARD_MASTER_KEYS)),
    },
  ],
  exports: [RecordsStore],
})
export class RecordsModule {}
