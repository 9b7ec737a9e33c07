import type { DynamicModule, INestApplication, LogLevel, Type } from '@nestjs/common';
import type { Server } from 'node:http';
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
  /**
   * How long SIGTERM/SIGINT waits for the requests and work in flight (default 5 s). Past it the open
   * connections are cut and the process exits 1: a stop is never held up by a client or a hung dependency.
   */
  shutdownTimeoutMs?: number;
}

const DEFAULT_SHUTDOWN_TIMEOUT_MS = 5_000;

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
 * A service whose stdout or stderr pipe is closed (whoever read its logs is gone, e.g. a killed parent)
 * gets EPIPE on its next log line; unheard, that error would kill it there, in the middle of its work or of
 * its shutdown. Its logs are lost anyway: it carries on, and a SIGTERM still stops it cleanly.
 */
function ignoreClosedLogPipes(): void {
  for (const stream of [process.stdout, process.stderr]) {
    if (stream.listenerCount('error') === 0) stream.on('error', () => undefined);
  }
}

/**
 * Starts a service: its HTTP server (health, readiness and whatever routes it has) and its NATS
 * microservice in the queue group named after the service, so replicas share the work.
 */
export async function bootstrapService(options: BootstrapOptions): Promise<INestApplication> {
  ignoreClosedLogPipes();
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
    const timeoutMs = options.shutdownTimeoutMs ?? DEFAULT_SHUTDOWN_TIMEOUT_MS;
    const server = app.getHttpServer() as Server;
    const deadline = setTimeout(() => {
      logger.error(`shutdown deadline of ${timeoutMs} ms passed, exiting with work still in flight`);
      server.closeAllConnections();
      process.exit(1);
    }, timeoutMs);
    deadline.unref();
    logger.log(`${signal} received, shutting down`);
    // Closing the server ends only the idle connections; a kept-alive one whose request is still in flight
    // would hold the close until the client or the keep-alive timeout (72 s) lets go. So every connection is
    // closed as soon as it is idle: its response is sent in full first.
    const idle = setInterval(() => server.closeIdleConnections(), 50);
    idle.unref();
    await app.close().catch((e: unknown) => logger.error(`shutdown error: ${String(e)}`));
    clearInterval(idle);
    await stopTracing();
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
  return app;
}

/** What every service's environment holds for `runService`: its port, its logging and its NATS user. */
export interface ServiceEnv extends NatsSettings {
  PORT: number;
  LOG_LEVEL: BootstrapOptions['logLevel'];
  LOG_FORMAT: BootstrapOptions['logFormat'];
}

/** A service's own options, from its environment: its module and whatever it adds (routes, Fastify's). */
export type ServiceOptions = Omit<BootstrapOptions, 'name' | 'port' | 'nats' | 'logLevel' | 'logFormat'>;

/**
 * A service's entry: loads its environment and starts it (`bootstrapService`) with its port, logging and
 * NATS user from there. A failure (an invalid environment, a dependency out of reach) exits 1 with the
 * error's message alone on stderr: never a stack, whose frames could carry configuration values.
 */
export function runService<Env extends ServiceEnv>(
  name: ServiceName,
  loadEnv: () => Env,
  options: (env: Env) => ServiceOptions,
): void {
  const start = async () => {
    const env = loadEnv();
    await bootstrapService({
      name,
      port: env.PORT,
      nats: env,
      logLevel: env.LOG_LEVEL,
      logFormat: env.LOG_FORMAT,
      ...options(env),
    });
  };
  start().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
