import './tracing';
import './openapi/zod-openapi';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { NATS_CONNECTION, NatsRequester } from '@switchboard/messaging';
import { runService } from '@switchboard/service-kit';
import { AccessHook } from './access/access.hook';
import { ApiKeyResolver } from './access/api-key.resolver';
import { AccountRateLimiter } from './access/rate-limiter';
import { AppModule } from './app.module';
import { OAuthSockets } from './connect/oauth-sockets';
import { loadEnv, type GatewayEnv } from './config/env';
import { ConsoleStatic, defaultConsoleDir } from './console/console-static';
import { CORS_POLICY } from './http/cors';
import { gatewayServerFactory, type FrontDoor } from './http/gateway-server';
import { sendError } from './http/error-reply';
import { configureHttp } from './http/http-setup';
import { parseQueryString } from './http/query-string';
import { registerTraceResponse } from './http/trace-response';
import { ProxyFrontDoor } from './proxy/proxy-front-door';
import { ProxyRoute } from './proxy/proxy-route';
import { ProviderWebhookRoute } from './webhooks/provider-webhook.route';
import { WebhookFrontDoor } from './webhooks/webhook-front-door';
import { embeddedWebhookIngest, remoteWebhookIngest } from './webhooks/webhook-ingest';

runService('gateway', loadEnv, (env) => {
  let frontDoors: FrontDoor[] = [];
  return {
    module: AppModule.forRoot(env),
    host: env.HOST,
    // A steady heap that moves 1.3 MB record pages: room to grow between full collections (service-kit).
    heapGrowingPercent: 100,
    bodyParser: false,
    fastify: {
      bodyLimit: env.SWITCHBOARD_BODY_LIMIT_BYTES,
      routerOptions: {
        ignoreTrailingSlash: true,
        ignoreDuplicateSlashes: true,
        maxParamLength: 500,
        querystringParser: parseQueryString,
      },
      // Only the configured proxies may name the client (X-Forwarded-For): per-address limits count by it.
      trustProxy: env.SWITCHBOARD_TRUST_PROXY,
      // A target the router cannot decode (malformed percent-encoding) gets our error shape, not Fastify's.
      frameworkErrors: (error, _request, reply) => {
        void (error.code === 'FST_ERR_BAD_URL'
          ? sendError(
              reply,
              'invalid_uri_params',
              'The request URL is not valid (malformed percent-encoding)',
            )
          : sendError(reply, 'server_error', 'An unexpected error occurred'));
      },
      // `/proxy` and `/webhook` requests meet their front doors before Fastify (ProxyFrontDoor, WebhookFrontDoor).
      serverFactory: gatewayServerFactory(() => frontDoors),
    },
    configure: async (app) => {
      frontDoors = await configureGateway(app, env);
    },
  };
});

/**
 * Everything the gateway adds to Nest's app: body limits, the access hook, CORS, the proxy and webhook
 * routes with their front doors (returned, for the server factory), the console and the OAuth socket.
 */
async function configureGateway(app: NestFastifyApplication, env: GatewayEnv): Promise<FrontDoor[]> {
  configureHttp(
    app,
    env.SWITCHBOARD_BODY_LIMIT_BYTES,
    {
      '/sync/deploy': env.SWITCHBOARD_DEPLOY_BODY_LIMIT_BYTES,
      '/sync/deploy/confirmation': env.SWITCHBOARD_DEPLOY_BODY_LIMIT_BYTES,
    },
    env.SWITCHBOARD_JSON_MAX_DEPTH,
  );
  app.get(AccessHook).register(app.getHttpAdapter().getInstance());
  registerTraceResponse(app.getHttpAdapter().getInstance());
  app.enableCors({ origin: CORS_POLICY.origin, exposedHeaders: [...CORS_POLICY.exposedHeaders] });
  // Last, so the route's scope inherits the access hook and CORS; it streams /proxy/* unparsed.
  const fastify = app.getHttpAdapter().getInstance();
  app.get(ProxyRoute).register(fastify);
  const proxyDoor = new ProxyFrontDoor(
    app.get(ApiKeyResolver),
    app.get(AccountRateLimiter),
    app.get(ProxyRoute),
    fastify,
  );
  // Public, raw-bodied provider webhook ingress (its own scope and body parser).
  const nats = app.get(NatsRequester);
  const ingest =
    env.SWITCHBOARD_WEBHOOK_INGRESS_MODE === 'remote'
      ? remoteWebhookIngest(nats)
      : embeddedWebhookIngest(
          nats,
          app.get(NATS_CONNECTION),
          env.SWITCHBOARD_SERVER_URL,
          env.SWITCHBOARD_JSON_MAX_DEPTH,
        );
  const webhookRoute = new ProviderWebhookRoute(ingest, app.get(AccountRateLimiter), {
    perIp: env.SWITCHBOARD_WEBHOOK_RATE_LIMIT_PER_IP_PER_MIN,
    perEnvironment: env.SWITCHBOARD_WEBHOOK_RATE_LIMIT_PER_ENV_PER_MIN,
  });
  webhookRoute.register(fastify);
  // The console's single-page app at /console (public files; the data it shows needs a session).
  await new ConsoleStatic(
    env.SWITCHBOARD_CONSOLE_DIR ?? defaultConsoleDir(),
    env.SWITCHBOARD_CONSOLE_TRACE_URL ?? null,
  ).register(fastify);
  // @nangohq/frontend's WebSocket on `/` (upgrades never reach Fastify's routes or the access hook).
  app.get(OAuthSockets).attach(app.getHttpServer());
  return [
    proxyDoor,
    new WebhookFrontDoor(webhookRoute, app.get(AccountRateLimiter), env.SWITCHBOARD_TRUST_PROXY, fastify),
  ];
}
