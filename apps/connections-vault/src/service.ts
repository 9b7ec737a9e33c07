import './tracing';
import { runService } from '@switchboard/service-kit';
import { AppModule } from './app.module';
import { loadEnv } from './config/env';

runService('connections-vault', loadEnv, (env) => ({ module: AppModule.forRoot(env) }));
