import './tracing';
import { runService } from '@switchboard/service-kit';
import { AppModule } from './app.module';
import { loadEnv } from './config/env';

runService('sync-orchestrator', loadEnv, (env) => ({
  module: AppModule.forRoot(env),
  // A steady heap that moves 1.3 MB record pages: room to grow between full collections (service-kit).
  heapGrowingPercent: 100,
}));
