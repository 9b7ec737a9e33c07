import { Global, Module } from '@nestjs/common';
import { createPrismaClient, type OrchestratorDb } from '@switchboard/db';
import { databaseLifecycle } from '@switchboard/service-kit';
import { ORCHESTRATOR_ENV, type OrchestratorEnv } from '../config/env';

export const ORCHESTRATOR_DB = Symbol('ORCHESTRATOR_DB');

/** The `orchestrator` schema's client: functions, versions, invocations, checkpoints. */
@Global()
@Module({
  providers: [
    {
      provide: ORCHESTRATOR_DB,
      inject: [ORCHESTRATOR_ENV],
      useFactory: (env: OrchestratorEnv): OrchestratorDb => createPrismaClient(env.DATABASE_URL),
    },
    databaseLifecycle(ORCHESTRATOR_DB),
  ],
  exports: [ORCHESTRATOR_DB],
})
export class DatabaseModule {}
