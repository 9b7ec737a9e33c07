import type { DynamicModule, INestApplication, LogLevel, Type } from '@nestjs/common';
import { setFlagsFromString } from 'node:v8';
import { NestFactory } from '@nestjs/core';
import { Transport, type MicroserviceOptions } from '@nestjs/microservices';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { ServiceName } from '@switchboard/contracts';
import {
  DepthLimitedNatsDeserializer,
  natsConnectionOptions,
  type NatsSettings,
} from '@switchboard/messaging';
import { HttpServerMetrics, stopTracing } from '@switchboard/observability';
import type { FastifyServerOptions } from 'fastify';
import { TraceLogger } from './trace-logger';

const LEVELS: LogLevel[] = ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'];

export interface BootstrapOptions {
  name: ServiceName;
  module: Type<unknown> | DynamicModule;
  port: number;
  host?: string;
  /** The server and this service's own NATS user (its `envFragments.nats` values). */
  nats: NatsSettings;
  logLevel: 'error' | 'warn' | 'log' | 'debug' | 'verbose';
  logFormat: 'pretty' | 'json';
  fastify?: FastifyServerOptions;
  /** Set false when the service registers its own body parsers in `configure`. */
  bodyParser?: boolean;
  /** Runs after the app is created and before it listens (routes, hooks, body parsers). */
  configure?: (app: NestFastifyApplication) => void | Promise<void>;
  /**
   * V8's old-generation growing factor as a percentage (`--heap-growing-percent`): after a full collection
   * the next may start once the heap grew by this share of what survived. Left to itself, V8 picks the
   * factor from its GC and allocation speeds; for a heap that barely grows it picks about the minimum, the
   * room left is then little more than the young generation, and V8 starts marking the whole heap again
   * soon after each full collection (`Start (task)` in `--trace-incremental-marking`), which cost the gateway
   * much of its CPU under `GET /records` (bench/README.md, "Why the current settings"). Set when the
   * service starts; V8 reads it at every collection (NODE_OPTIONS would refuse the flag).
   */
  heapGrowingPercent?: number;
}

/** One per process: the gateway's front door records into the same histogram. */
export const httpServerMetrics = new HttpServerMetrics();

/**
 * RED per route: every answered request, by its route template (`/connection/:connectionId`; `unmatched`
 * for a 404 no route took, so probing URLs cannot grow the series), method and status. Added before any
 * route or plugin, so every scope inherits it.
 */
function recordHttpMetrics(app: NestFastifyApplication): void {
  app
    .getHttpAdapter()
    .getInstance()
    .addHook('onResponse', (request, reply, done) => {
      httpServerMetrics.record(
        request.method,
        request.routeOptions.url ?? 'unmatched',
        reply.statusCode,
        reply.elapsedTime / 1000,
      );
      done();
    });
}

/**
 * Starts a service: its HTTP server (health, readiness and whatever routes it has) and its NATS
 * microservice in the queue group named after the service, so replicas share the work.
 */
export async function bootstrapService(options: BootstrapOptions): Promise<INestApplication> {
  if (options.heapGrowingPercent !== undefined) {
    setFlagsFromString(`--heap-growing-percent=${options.heapGrowingPercent}`);
  }
  const logger = new TraceLogger(options.name, {
    json: options.logFormat === 'json',
    colors: options.logFormat === 'pretty' && process.stdout.isTTY,
    logLevels: LEVELS.slice(0, LEVELS.indexOf(options.logLevel) + 1),
  });
  const app = await NestFactory.create<NestFastifyApplication>(
    options.module,
    new FastifyAdapter({ ...options.fastify }),
    { logger, bufferLogs: false, bodyParser: options.bodyParser ?? true },
  );
  recordHttpMetrics(app);
  app.connectMicroservice<MicroserviceOptions>(
    {
      transport: Transport.NATS,
      options: {
        ...natsConnectionOptions(options.nats, `${options.name}-server`),
        queue: options.name,
        // A payload nesting too deep is answered `invalid_body`, never walked.
        deserializer: new DepthLimitedNatsDeserializer(),
      },
    },
    { inheritAppConfig: true },
  );
  await options.configure?.(app);
  await app.startAllMicroservices();
  await app.listen(options.port, options.host ?? '0.0.0.0');
  logger.log(`listening on :${options.port}, NATS queue group "${options.name}"`);

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    logger.log(`${signal} received, shutting down`);
    const force = setTimeout(() => process.exit(1), 10_000);
    force.unref();
    await app.close().catch((e: unknown) => logger.error(`shutdown error: ${String(e)}`));
    await stopTracing();
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
  return app;
}
