import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import {
  freePort,
  repoRoot,
  startStack,
  testInfrastructure,
  withoutNatsSecrets,
  type Stack,
} from '@switchboard/testing';
import { call } from './support/http';
import { AuthEventPublisher } from './support/webhook-events';
import { WebhookReceiver } from './support/webhook-receiver';

/**
 * reliability.md §2.4: the relay is SIGKILLed at random moments (while booting, while reading events,
 * while a POST is in flight) 20 times during a run of deliveries. Every event must still arrive: events
 * are acknowledged on JetStream only once their deliveries are in Postgres, and a delivery's lease
 * expires when the process holding it dies.
 */

const EVENTS = 400;
const KILLS = 20;

jest.setTimeout(150_000);

// The stack's services and the relays this test starts must share the master keys (signing keys are
// encrypted with them), so the test chooses them.
const previousMasterKeys = process.env.TEST_MASTER_KEYS;
process.env.TEST_MASTER_KEYS ??= `1:${randomBytes(32).toString('base64')}`;

const RELAY_ENV = {
  SWITCHBOARD_EGRESS_ALLOWED_CIDRS: '127.0.0.1/32',
  SWITCHBOARD_WEBHOOK_RETRY_SCHEDULE: '0,100ms,300ms,1s,2s,2s,2s,2s,2s,2s,2s,2s',
  SWITCHBOARD_WEBHOOK_POLL_INTERVAL: '100ms',
  SWITCHBOARD_WEBHOOK_TIMEOUT: '3s',
  SWITCHBOARD_WEBHOOK_ACK_WAIT: '2s',
  SWITCHBOARD_WEBHOOK_BREAKER_COOLDOWN: '500ms',
};

describe('webhook relay killed repeatedly', () => {
  let stack: Stack;
  let receiver: WebhookReceiver;
  let publisher: AuthEventPublisher;
  let relay: ChildProcess | undefined;

  const startRelay = async (): Promise<{ child: ChildProcess; port: number }> => {
    const infra = await testInfrastructure();
    const port = await freePort();
    const child = spawn(process.execPath, [join(repoRoot(), 'apps/webhook-relay/dist/main.js')], {
      env: {
        ...withoutNatsSecrets(process.env),
        NATS_URL: stack.natsUrl,
        ...stack.natsCredentials('webhook-relay'),
        DATABASE_URL: stack.databaseUrl,
        REDIS_URL: infra.redisUrl,
        SWITCHBOARD_MASTER_KEYS: process.env.TEST_MASTER_KEYS!,
        SWITCHBOARD_SERVER_URL: stack.gatewayUrl,
        PORT: String(port),
        LOG_FORMAT: 'json',
        LOG_LEVEL: 'warn',
        OTEL_TRACES_EXPORTER: 'none',
        ...RELAY_ENV,
      },
      stdio: ['ignore', 'ignore', process.env.SWITCHBOARD_TEST_LOGS ? 'inherit' : 'ignore'],
    });
    return { child, port };
  };

  /** Until the relay answers /ready (its JetStream consumers run); false if it died or took too long. */
  const untilReady = async (port: number, child: ChildProcess): Promise<boolean> => {
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline && child.exitCode === null) {
      const ok = await fetch(`http://127.0.0.1:${port}/ready`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) return true;
      await new Promise((r) => setTimeout(r, 50));
    }
    return false;
  };

  const kill = (child: ChildProcess) =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });

  beforeAll(async () => {
    receiver = await new WebhookReceiver().start();
    // The API (the gateway, and auth-connect for its keys) and the relay are all this test touches.
    stack = await startStack({
      services: ['gateway', 'auth-connect', 'webhook-relay'],
      serviceEnv: { 'webhook-relay': RELAY_ENV },
    });
    publisher = await AuthEventPublisher.connect(stack.natsUrl);
  });

  afterAll(async () => {
    if (relay) await kill(relay);
    await publisher?.close();
    await stack?.stop();
    await receiver?.stop();
    if (previousMasterKeys === undefined) delete process.env.TEST_MASTER_KEYS;
  });

  it(`loses no event across ${KILLS} SIGKILLs at random points`, async () => {
    const settings = await call(stack.gatewayUrl, 'PATCH', '/environment', {
      key: stack.secretKey,
      body: { webhook_settings: { primary_url: `${receiver.url}/hook` } },
    });
    expect(settings.status).toBe(200);
    const environmentId = (settings.body as { data: { id: number } }).data.id;
    // Slow answers widen the window in which a kill lands mid-POST.
    receiver.mode = { kind: 'slow', delayMs: 150 };

    // From here on, only the relays this test starts (and kills) do the work.
    await stack.stopService('webhook-relay', 'SIGKILL');

    const events = Array.from({ length: EVENTS }, (_, i) => publisher.event(environmentId, `conn-${i % 50}`));
    let published = 0;
    const publishing = (async () => {
      while (published < events.length) {
        // Spread over the whole kill period, so kills land while events are read and POSTs are in flight.
        const batch = events.slice(published, published + 10);
        await Promise.all(batch.map((e) => publisher.publish(e)));
        published += batch.length;
        await new Promise((r) => setTimeout(r, 700));
      }
    })();

    const kills: { afterMs: number; ready: boolean; postsInFlight: number }[] = [];
    for (let i = 0; i < KILLS; i++) {
      const { child, port } = await startRelay();
      relay = child;
      const started = Date.now();
      let ready = false;
      if (i % 4 === 0) {
        // Some kills land while the relay boots.
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 700));
      } else {
        // Most land at a random point while it reads events and POSTs deliveries.
        ready = await untilReady(port, child);
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 1000));
      }
      const postsInFlight = receiver.inFlight;
      await kill(child);
      kills.push({ afterMs: Date.now() - started, ready, postsInFlight });
    }
    await publishing;
    const deliveredBeforeTheLastRelay = new Set(receiver.received.map((r) => r.headers['webhook-id'])).size;
    relay = (await startRelay()).child;

    const deadline = Date.now() + 60_000;
    const ids = () => new Set(receiver.received.map((r) => r.headers['webhook-id']));
    while (ids().size < EVENTS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));

    const byId = new Map<string, Set<string>>();
    for (const hook of receiver.received) {
      const id = hook.headers['webhook-id'] as string;
      byId.set(id, (byId.get(id) ?? new Set()).add(hook.body));
    }
    // One webhook-id per event: 400 distinct ids means every event arrived.
    expect(byId.size).toBe(EVENTS);
    // The kills really hit working relays (which delivered most events); how many landed mid-POST is reported.
    expect(kills.filter((k) => k.ready).length).toBeGreaterThanOrEqual(KILLS / 2);
    expect(deliveredBeforeTheLastRelay).toBeGreaterThan(EVENTS / 2);
    for (const bodies of byId.values()) expect(bodies.size).toBe(1);
    process.stdout.write(
      `sigkill: ${EVENTS}/${EVENTS} delivered across ${KILLS} kills (${kills.filter((k) => k.ready).length} after the relay was ready, ` +
        `${kills.filter((k) => k.postsInFlight > 0).length} with POSTs in flight), ${deliveredBeforeTheLastRelay} delivered before the last relay, ` +
        `${receiver.received.length - EVENTS} duplicates\n`,
    );
  });
});
