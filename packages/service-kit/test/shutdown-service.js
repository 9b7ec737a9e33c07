// A service started with bootstrapService (from dist/: build first) for src/shutdown.int-spec.ts: GET /slow
// answers after SLOW_MS, GET /hang never does. Plain JavaScript, so the test can run it with node.
require('reflect-metadata');
const { Controller, Get, Module } = require('@nestjs/common');
const { bootstrapService, ServiceKitModule } = require('../dist');

class SlowController {
  async slow() {
    await new Promise((resolve) => setTimeout(resolve, Number(process.env.SLOW_MS)));
    return { done: true };
  }
  hang() {
    return new Promise(() => undefined);
  }
}
for (const route of ['slow', 'hang']) {
  Get(route)(
    SlowController.prototype,
    route,
    Object.getOwnPropertyDescriptor(SlowController.prototype, route),
  );
}
Controller()(SlowController);

const nats = { NATS_URL: process.env.NATS_URL };
class AppModule {}
Module({ imports: [ServiceKitModule.forRoot({ name: 'proxy', nats })], controllers: [SlowController] })(
  AppModule,
);

void bootstrapService({
  name: 'proxy',
  module: AppModule,
  port: Number(process.env.PORT),
  host: '127.0.0.1',
  nats,
  logLevel: 'log',
  logFormat: 'json',
  ...(process.env.SHUTDOWN_TIMEOUT_MS ? { shutdownTimeoutMs: Number(process.env.SHUTDOWN_TIMEOUT_MS) } : {}),
});
