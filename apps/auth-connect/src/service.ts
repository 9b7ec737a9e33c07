import './tracing';
import { bootstrapService } from '@switchboard/service-kit';
import { AppModule } from './app.module';
import { loadEnv } from './config/env';

async function main(): Promise<void> {
  const env = loadEnv();
  await bootstrapService({
    name: 'auth-connect',
    module: AppModule.forRoot(env),
    port: env.PORT,
    nats: env,
    logLevel: env.LOG_LEVEL,
    logFormat: env.LOG_FORMAT,
  });
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
