import { connect, StringCodec } from 'nats';
import { Client } from 'pg';
import { laneOfWorker, openTestLanes, TEST_LANES_VARIABLE } from './lanes';
import { natsCredentials, natsPasswordsFrom } from './nats';
import { portOpen } from './ports';

// Lanes are made from what `npm test` provides (the generated NATS configuration and the migrated test
// database); a run without them (a developer's own services) has nothing to make them from.
const provided = Boolean(
  process.env.TEST_NATS_CONF && process.env.TEST_DATABASE_URL && process.env.TEST_REDIS_URL,
);
const describeWithLanes = provided ? describe : describe.skip;

describeWithLanes('test lanes', () => {
  it('gives each worker a NATS server and a migrated database no other worker sees, and removes them', async () => {
    const opened = await openTestLanes(2);
    let closed = false;
    try {
      const [first, second] = opened.lanes;
      expect(opened.lanes).toHaveLength(2);
      expect(first!.natsUrl).not.toBe(second!.natsUrl);
      expect(first!.databaseUrl).not.toBe(second!.databaseUrl);
      // Accounts are numbered alike in every lane's database: their rate-limit windows must not meet.
      expect(first!.redisUrl).not.toBe(second!.redisUrl);
      expect(first!.redisUrl).not.toBe(process.env.TEST_REDIS_URL);

      // A request on one lane's NATS is never answered by a service on the other's.
      const admin = natsCredentials(natsPasswordsFrom(process.env), 'admin');
      const options = admin.NATS_USER ? { user: admin.NATS_USER, pass: admin.NATS_PASSWORD } : {};
      const [a, b] = await Promise.all([
        connect({ servers: first!.natsUrl, ...options }),
        connect({ servers: second!.natsUrl, ...options }),
      ]);
      const codec = StringCodec();
      b.subscribe('lanes.probe', { callback: (_e, m) => m.respond(codec.encode('other lane')) });
      a.subscribe('lanes.probe', { callback: (_e, m) => m.respond(codec.encode('own lane')) });
      await Promise.all([a.flush(), b.flush()]);
      for (let i = 0; i < 5; i++) {
        expect(codec.decode((await a.request('lanes.probe', undefined, { timeout: 2000 })).data)).toBe(
          'own lane',
        );
      }
      await Promise.all([a.close(), b.close()]);

      // Both databases hold the migrated schema; a row written in one is not in the other.
      const clients = [new Client(first!.databaseUrl), new Client(second!.databaseUrl)];
      await Promise.all(clients.map((c) => c.connect()));
      try {
        for (const c of clients) {
          const { rows } = await c.query(`SELECT count(*)::int AS n FROM _prisma_migrations`);
          expect(rows[0].n).toBeGreaterThan(0);
        }
        await clients[0]!.query('CREATE TABLE lane_probe (id int)');
        const { rows } = await clients[1]!.query(`SELECT to_regclass('lane_probe') AS t`);
        expect(rows[0].t).toBeNull();
      } finally {
        await Promise.all(clients.map((c) => c.end()));
      }

      await opened.close();
      closed = true;
      const port = Number(new URL(first!.natsUrl).port);
      expect(await portOpen(port)).toBe(false);
      const check = new Client(process.env.TEST_DATABASE_URL);
      await check.connect();
      try {
        const name = new URL(first!.databaseUrl).pathname.slice(1);
        const { rows } = await check.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
        expect(rows).toHaveLength(0);
      } finally {
        await check.end();
      }
    } finally {
      if (!closed) await opened.close();
    }
  }, 60_000);
});

describe('a worker finding its lane', () => {
  const lanes = JSON.stringify([
    {
      natsUrl: 'nats://127.0.0.1:1',
      databaseUrl: 'postgresql://postgres@127.0.0.1:5432/one',
      redisUrl: 'redis://127.0.0.1:6379/2',
    },
    {
      natsUrl: 'nats://127.0.0.1:2',
      databaseUrl: 'postgresql://postgres@127.0.0.1:5432/two',
      redisUrl: 'redis://127.0.0.1:6379/3',
    },
  ]);

  it('takes the lane of its jest worker number', () => {
    expect(laneOfWorker({ [TEST_LANES_VARIABLE]: lanes, JEST_WORKER_ID: '2' })?.natsUrl).toBe(
      'nats://127.0.0.1:2',
    );
    expect(laneOfWorker({ [TEST_LANES_VARIABLE]: lanes, JEST_WORKER_ID: '1' })?.databaseUrl).toMatch(
      /\/one$/,
    );
  });

  it('has none when the run opened none', () => {
    expect(laneOfWorker({ JEST_WORKER_ID: '1' })).toBeUndefined();
  });
});
