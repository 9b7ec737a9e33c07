import './tracing';
import { runService } from '@switchboard/service-kit';
import { AppModule } from './app.module';
import { loadEnv } from './config/env';
import { ProxyRoute } from './forwarding/proxy.route';

runService('proxy', loadEnv, (env) => ({
  module: AppModule.forRoot(env),
  fastify: {
    // A proxied request may legitimately wait out retries and a provider's Retry-After.
    requestTimeout: 0,
    // Provider endpoints can be long (ids, signed paths).
    routerOptions: { maxParamLength: 2048 },
  },
  configure: (app) => {
    app.get(ProxyRoute).register(app.getHttpAdapter().getInstance());
  },
}));
