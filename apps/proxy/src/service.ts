import './tracing';
import { bootstrapService } from '@switchboard/service-kit';
import { AppModule } from './app.module';
import { loadEnv } from './config/env';
import { ProxyRoute } from './forwarding/proxy.route';

async function main(): Promise<void> {
  const env = loadEnv();
  await bootstrapService({
    name: 'proxy',
    module: AppModule.forRoot(env),
    port: env.PORT,
    nats: env,
    logLevel: env.LOG_LEVEL,
    logFormat: env.LOG_FORMAT,
    fastify: {
      // A proxied request may legitimately wait out retries and a provider's Retry-After.
      requestTimeout: 0,
      // Provider endpoints can be long (ids, signed paths).
      routerOptions: { maxParamLength: 2048 },
    },
    configure: (app) => {
      app.get(ProxyRoute).register(app.getHttpAdapter().getInstance());
    },
  });
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
