import { existsSync } from 'node:fs';
import { laneOfWorker } from './lanes';
import { natsPasswordsFrom, type NatsPasswords } from './nats';

export interface TestInfrastructure {
  databaseUrl: string;
  natsUrl: string;
  /**
   * The NATS users' passwords when the server authenticates (`npm test` exports `NATS_PASSWORD_<USER>`):
   * each service a test starts connects as its own user. Empty for a server without authentication.
   */
  natsPasswords: NatsPasswords;
  temporalAddress: string;
  redisUrl: string;
  /** Where each value came from, for the test log. */
  source: 'environment' | 'testcontainers';
  stop(): Promise<void>;
}

const ENV_NAMES = ['TEST_DATABASE_URL', 'TEST_NATS_URL', 'TEST_TEMPORAL_ADDRESS', 'TEST_REDIS_URL'] as const;

let cached: Promise<TestInfrastructure> | undefined;

/**
 * Where tests find Postgres, NATS (with JetStream), Temporal and Redis. One fast check decides:
 * the `TEST_*` variables (set by `npm test`, pointing at running services) win; otherwise a reachable
 * Docker engine starts them with testcontainers; otherwise the suite stops with a message saying what to do.
 */
export function testInfrastructure(): Promise<TestInfrastructure> {
  cached ??= resolveTestInfrastructure();
  return cached;
}

export async function resolveTestInfrastructure(
  env: NodeJS.ProcessEnv = process.env,
): Promise<TestInfrastructure> {
  if (ENV_NAMES.every((name) => env[name])) {
    // A jest run with lanes (`@switchboard/testing/jest-lanes`) gives this worker a NATS server, a
    // database and a Redis database of its own, so workers and packages tested at once never answer each
    // other's requests or share a rate-limit window.
    const lane = laneOfWorker(env);
    return {
      databaseUrl: lane?.databaseUrl ?? env.TEST_DATABASE_URL!,
      natsUrl: lane?.natsUrl ?? env.TEST_NATS_URL!,
      natsPasswords: natsPasswordsFrom(env),
      temporalAddress: env.TEST_TEMPORAL_ADDRESS!,
      redisUrl: lane?.redisUrl ?? env.TEST_REDIS_URL!,
      source: 'environment',
      stop: async () => undefined,
    };
  }
  if (await dockerReachable(env)) return startContainers();
  const missing = ENV_NAMES.filter((name) => !env[name]).join(', ');
  throw new Error(
    `No test infrastructure: ${missing} not set and no Docker engine is reachable. ` +
      'Run the suite with `npm test` (it starts and points at local services), or export those variables, ' +
      'or make a Docker engine reachable (DOCKER_HOST or /var/run/docker.sock) so testcontainers can start them.',
  );
}

async function dockerReachable(env: NodeJS.ProcessEnv): Promise<boolean> {
  // Cheap check first, so testcontainers is never even loaded on machines without Docker.
  if (!env.DOCKER_HOST && !existsSync('/var/run/docker.sock')) return false;
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await getContainerRuntimeClient();
    return true;
  } catch {
    return false;
  }
}

async function startContainers(): Promise<TestInfrastructure> {
  const { GenericContainer, Wait } = await import('testcontainers');
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
  const [pg, nats, temporal, redis] = await Promise.all([
    new PostgreSqlContainer('postgres:15').start(),
    new GenericContainer('nats:2.10')
      .withCommand(['-js'])
      .withExposedPorts(4222)
      .withWaitStrategy(Wait.forLogMessage(/Server is ready/))
      .start(),
    new GenericContainer('temporalio/temporal:1.5.1')
      .withCommand(['server', 'start-dev', '--ip', '0.0.0.0', '--headless'])
      .withExposedPorts(7233)
      .withWaitStrategy(Wait.forListeningPorts())
      .start(),
    new GenericContainer('redis:7').withExposedPorts(6379).start(),
  ]);
  return {
    databaseUrl: pg.getConnectionUri(),
    natsUrl: `nats://${nats.getHost()}:${nats.getMappedPort(4222)}`,
    natsPasswords: {},
    temporalAddress: `${temporal.getHost()}:${temporal.getMappedPort(7233)}`,
    redisUrl: `redis://${redis.getHost()}:${redis.getMappedPort(6379)}`,
    source: 'testcontainers',
    stop: async () => {
      await Promise.all([pg.stop(), nats.stop(), temporal.stop(), redis.stop()]);
    },
  };
}
