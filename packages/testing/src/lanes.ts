import { spawnSync } from 'node:child_process';
import { spawnNatsServer, type NatsServer } from './nats';

/**
 * A test lane: the NATS server, database and Redis database one jest worker has to itself. The services of
 * a stack answer requests on NATS in queue groups and sweep their tables, so two workers sharing a server
 * or a database would answer and sweep each other's work; and every lane's database numbers its accounts
 * from the same point, so rate-limit windows in one Redis database (`account:<id>`) would be shared by
 * two lanes' accounts. With a lane each, test files run in parallel. Temporal stays shared: every stack
 * polls a task queue of its own.
 */
export interface TestLane {
  natsUrl: string;
  databaseUrl: string;
  redisUrl: string;
}

/** Where the lanes of a jest run are handed to its workers (set by the global setup, read by each worker). */
export const TEST_LANES_VARIABLE = 'SWITCHBOARD_TEST_LANES';

export interface OpenLanes {
  lanes: TestLane[];
  close(): Promise<void>;
}

/**
 * Opens `count` lanes when the run was given what they are made from: `TEST_NATS_CONF` (the NATS
 * configuration `npm test` generated, whose users' passwords are in the environment) and
 * `TEST_DATABASE_URL` (a migrated database, copied as a template for each lane). Without them (a
 * developer's own services, testcontainers) it opens none and the workers share the `TEST_*` services.
 */
export async function openTestLanes(count: number, env: NodeJS.ProcessEnv = process.env): Promise<OpenLanes> {
  const conf = env.TEST_NATS_CONF;
  const template = env.TEST_DATABASE_URL;
  const redis = env.TEST_REDIS_URL;
  if (!conf || !template || !redis || count < 1) return { lanes: [], close: async () => undefined };
  const opened: { lane: TestLane; nats: NatsServer; database: string }[] = [];
  const close = async () => {
    await Promise.all(opened.map(({ nats }) => nats.stop()));
    for (const { database } of opened) psql(template, `DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
  };
  try {
    for (let index = 1; index <= count; index++) {
      const database = `${databaseName(template)}_lane_${process.pid}_${index}`;
      await createDatabaseFrom(template, database);
      const nats = await spawnNatsServer({ conf, env, purpose: 'nats-server for a test lane' });
      opened.push({
        lane: {
          natsUrl: nats.url,
          databaseUrl: withDatabase(template, database),
          redisUrl: laneRedis(redis),
        },
        nats,
        database,
      });
    }
  } catch (error) {
    await close();
    throw error;
  }
  return { lanes: opened.map((o) => o.lane), close };
}

/** The lane of this jest worker (`JEST_WORKER_ID`, 1-based), if the run opened lanes. */
export function laneOfWorker(env: NodeJS.ProcessEnv = process.env): TestLane | undefined {
  const lanes = env[TEST_LANES_VARIABLE];
  if (!lanes) return undefined;
  const parsed = JSON.parse(lanes) as TestLane[];
  const worker = Number(env.JEST_WORKER_ID ?? '1');
  return parsed[(worker - 1) % parsed.length];
}

async function createDatabaseFrom(templateUrl: string, database: string) {
  // Concurrent copies of one template can meet a short "being accessed by other users"; retry a few times.
  for (let attempt = 1; ; attempt++) {
    const result = psql(templateUrl, `CREATE DATABASE "${database}" TEMPLATE "${databaseName(templateUrl)}"`);
    if (result.status === 0) return;
    if (attempt >= 5 || !/being accessed by other users/.test(result.stderr)) {
      throw new Error(`could not create the test lane's database ${database}: ${result.stderr.trim()}`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

/**
 * A Redis database for a lane, emptied: the next of databases 1-15 other than the run's own, round robin
 * over every lane opened on this server (a counter in the run's database), so lanes open at once get
 * different ones.
 */
function laneRedis(runUrl: string): string {
  const own = Number(new URL(runUrl).pathname.slice(1) || '0');
  const candidates = Array.from({ length: 15 }, (_, i) => i + 1).filter((db) => db !== own);
  const counter = redisCli(runUrl, ['INCR', 'switchboard:test-lanes']);
  const db = candidates[Number(counter) % candidates.length]!;
  const url = new URL(runUrl);
  url.pathname = `/${db}`;
  redisCli(url.toString(), ['FLUSHDB']);
  return url.toString();
}

function redisCli(url: string, args: string[]): string {
  const result = spawnSync('redis-cli', ['-u', url, ...args], { encoding: 'utf8' });
  if (result.status !== 0 || /^ERR/m.test(result.stdout)) {
    throw new Error(
      `redis-cli ${args[0]} for a test lane failed: ${(result.stderr || result.stdout).trim()}`,
    );
  }
  return result.stdout.trim();
}

function psql(anyUrl: string, sql: string) {
  return spawnSync('psql', ['-q', '-v', 'ON_ERROR_STOP=1', withDatabase(anyUrl, 'postgres'), '-c', sql], {
    encoding: 'utf8',
  });
}

function databaseName(url: string): string {
  return decodeURIComponent(new URL(url).pathname.slice(1));
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${encodeURIComponent(database)}`;
  return parsed.toString();
}
