import { Module, type DynamicModule } from '@nestjs/common';
import { ServiceKitModule } from '@switchboard/service-kit';
import { ORCHESTRATOR_ENV, type OrchestratorEnv } from './config/env';
import { DatabaseModule } from './database/database.module';
import { FunctionsModule } from './functions/functions.module';
import { RecordsModule } from './records/records.module';
import { TemporalModule } from './temporal/temporal.module';

@Module({})
export class AppModule {
  static forRoot(env: OrchestratorEnv): DynamicModule {
    return {
      module: AppModule,
      global: true,
      imports: [
        ServiceKitModule.forRoot({ name: 'sync-orchestrator', nats: env }),
        DatabaseModule,
        TemporalModule,
        FunctionsModule,
        RecordsModule,
      ],
      providers: [{ provide: ORCHESTRATOR_ENV, useValue: env }],
      exports: [ORCHESTRATOR_ENV],
    };
  }
}
