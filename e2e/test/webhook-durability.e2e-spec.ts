import { EVENT_CONSUMERS } from '@switchboard/contracts';
import { startStack, type Stack } from '@switchboard/testing';
import { Webhook } from 'standardwebhooks';
import { consumerDrained, noDeliveryPending } from './support/barriers';
import { call } from './support/http';
import { START_HOOK_TIMEOUT_MS, STACK_READY_TIMEOUT_MS } from './support/processes';
import { AuthEventPublisher } from './support/webhook-events';
import { headerRecord, WebhookReceiver } from './support/webhook-receiver';

/**
 * reliability.md §2.4: the customer's endpoint is down for "10 minutes" while 1,000 events across 100
 * connections arrive. Time is compressed 100×: Svix's schedule (0, 5 s, 5 min, 30 min, 2 h, …) becomes
 * 0, 50 ms, 3 s, 18 s, 72 s, … and the outage lasts 6 s. Afterwards every event must have arrived, each
 * with one stable `webhook-id`, duplicates only as byte-identical repeats of the same id.
 */

const EVENTS = 1000;
const CONNECTIONS = 100;
const OUTAGE_MS = 6_000;

jest.setTimeout(120_000);

interface Scenario {
  stack: Stack;
  receiver: WebhookReceiver;
  publisher: AuthEventPublisher;
}

/** A receiver on loopback and a stack whose relay runs with `relayEnv` (plus loopback egress and a fast poll). */
function relayScenario(relayEnv: Record<string, string>): { get: () => Scenario } {
  let scenario: Partial<Scenario> = {};
  beforeAll(async () => {
    const receiver = await new WebhookReceiver().start();
    scenario.receiver = receiver;
    const stack = await startStack({
      // The API (the gateway, and auth-connect for its keys) and the relay are all these tests touch.
      services: ['gateway', 'auth-connect', 'webhook-relay'],
      serviceEnv: {
        'webhook-relay': {
          SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1',
          SWITCHBOARD_WEBHOOK_POLL_INTERVAL: '100ms',
          SWITCHBOARD_WEBHOOK_TIMEOUT: '2s',
          ...relayEnv,
        },
      },
      // Three stacks in one file, on a machine other suites load too.
      readyTimeoutMs: STACK_READY_TIMEOUT_MS,
    });
    scenario.stack = stack;
    scenario.publisher = await AuthEventPublisher.connect(stack.natsUrl);
  }, START_HOOK_TIMEOUT_MS);
  afterAll(async () => {
    await scenario.publisher?.close();
    await scenario.stack?.stop();
    await scenario.receiver?.stop();
    scenario = {};
  });
  return { get: () => scenario as Scenario };
}

/** Points the environment's webhooks at the receiver; resolves with the environment id and signing key. */
async function subscribe({
  stack,
  receiver,
}: Scenario): Promise<{ environmentId: number; signingKey: string }> {
  const settings = await call(stack.gatewayUrl, 'PATCH', '/environment', {
    key: stack.secretKey,
    body: { webhook_settings: { primary_url: `${receiver.url}/hook` } },
  });
  expect(settings.status).toBe(200);
  const { id: environmentId, webhook_signing_key: signingKey } = (
    settings.body as { data: { id: number; webhook_signing_key: string } }
  ).data;
  return { environmentId, signingKey };
}

describe('webhook delivery while the receiver is down', () => {
  const scenario = relayScenario({
    SWITCHBOARD_WEBHOOK_RETRY_SCHEDULE: '0,50ms,3s,18s,72s,180s,360s,360s',
    SWITCHBOARD_WEBHOOK_BREAKER_COOLDOWN: '1s',
  });

  it('delivers 1000/1000 events after a compressed 10-minute outage, duplicates only under the same id', async () => {
    const { stack, receiver, publisher } = scenario.get();
    const { environmentId, signingKey } = await subscribe(scenario.get());

    await receiver.stop();
    const outageStarted = Date.now();
    const events = Array.from({ length: EVENTS }, (_, i) =>
      publisher.event(environmentId, `conn-${i % CONNECTIONS}`),
    );
    for (let i = 0; i < events.length; i += 50)
      await Promise.all(events.slice(i, i + 50).map((e) => publisher.publish(e)));
    await new Promise((r) => setTimeout(r, Math.max(0, OUTAGE_MS - (Date.now() - outageStarted))));
    expect(receiver.received).toHaveLength(0);
    await receiver.restart();

    const deadline = Date.now() + 60_000;
    const ids = () => new Set(receiver.received.map((r) => r.headers['webhook-id']));
    while (ids().size < EVENTS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    const recoveredIn = Date.now() - outageStarted - OUTAGE_MS;

    const byId = new Map<string, string[]>();
    for (const hook of receiver.received) {
      const id = hook.headers['webhook-id'] as string;
      byId.set(id, [...(byId.get(id) ?? []), hook.body]);
    }
    expect(byId.size).toBe(EVENTS);
    const connections = new Map<string, number>();
    for (const [id, bodies] of byId) {
      // A duplicate is the same message again: same id, same bytes.
      expect(new Set(bodies).size).toBe(1);
      const body = JSON.parse(bodies[0]!) as { connectionId: string; type: string };
      expect(body.type).toBe('auth');
      connections.set(body.connectionId, (connections.get(body.connectionId) ?? 0) + 1);
      expect(id).toMatch(/^msg_/);
    }
    expect(connections.size).toBe(CONNECTIONS);
    expect([...connections.values()].every((n) => n === EVENTS / CONNECTIONS)).toBe(true);
    const duplicates = receiver.received.length - EVENTS;
    expect(duplicates).toBeLessThanOrEqual(EVENTS * 0.01);

    // Every delivery is signed with the environment's key, whichever attempt got through.
    for (const hook of receiver.received.slice(0, 50)) {
      expect(() => new Webhook(signingKey).verify(hook.body, headerRecord(hook.headers))).not.toThrow();
    }

    // The log agrees: nothing pending, nothing failed.
    const pending = await call(stack.gatewayUrl, 'GET', '/environment/webhook-deliveries?status=pending', {
      key: stack.secretKey,
    });
    expect((pending.body as { data: unknown[] }).data).toEqual([]);
    const failed = await call(stack.gatewayUrl, 'GET', '/environment/webhook-deliveries?status=failed', {
      key: stack.secretKey,
    });
    expect((failed.body as { data: unknown[] }).data).toEqual([]);
    process.stdout.write(
      `receiver-down: 1000/1000 delivered ${recoveredIn} ms after recovery, ${duplicates} duplicates\n`,
    );
  });
});

/**
 * After an outage, deliveries that already failed sit at a backed-off retry step (minutes, in production).
 * The first delivery that gets through the endpoint's breaker again makes all of them due at once.
 */
describe('webhook delivery when the receiver comes back', () => {
  const scenario = relayScenario({
    // A failed first attempt waits 60 s: far beyond this test's bound unless it is pulled forward.
    SWITCHBOARD_WEBHOOK_RETRY_SCHEDULE: '0,60s,60s',
    SWITCHBOARD_WEBHOOK_BREAKER_FAILURES: '3',
    SWITCHBOARD_WEBHOOK_BREAKER_COOLDOWN: '300ms',
  });

  it('delivers the backlog as soon as a delivery gets through again, not at its next retry step', async () => {
    const { stack, receiver, publisher } = scenario.get();
    const { environmentId } = await subscribe(scenario.get());

    await receiver.stop();
    const backlog = Array.from({ length: 20 }, (_, i) => publisher.event(environmentId, `conn-${i}`));
    await Promise.all(backlog.map((e) => publisher.publish(e)));
    // Every one of them fails once (refused connection, or the breaker's failing probe) and waits 60 s.
    const failedOnce = async () => {
      const page = await call(stack.gatewayUrl, 'GET', '/environment/webhook-deliveries?status=pending', {
        key: stack.secretKey,
      });
      const rows = (page.body as { data: { attempts: number }[] }).data;
      return rows.length === backlog.length && rows.every((row) => row.attempts >= 1);
    };
    const until = Date.now() + 15_000;
    while (!(await failedOnce()) && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
    expect(await failedOnce()).toBe(true);

    await receiver.restart();
    const back = Date.now();
    await new Promise((r) => setTimeout(r, 400)); // past the breaker's cooldown
    await publisher.publish(publisher.event(environmentId, 'conn-after'));

    const ids = () => new Set(receiver.received.map((r) => r.headers['webhook-id']));
    const deadline = Date.now() + 20_000;
    while (ids().size < backlog.length + 1 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    expect(ids().size).toBe(backlog.length + 1);
    // Without the pull-forward the backlog would arrive only at its 60 s retry.
    expect(Date.now() - back).toBeLessThan(15_000);
  });
});

/**
 * A rolling deploy stops relays with SIGTERM while events stream in. Whatever a stopping relay has already
 * sent must be recorded and acknowledged before it exits, or JetStream hands the event to the next relay,
 * which sends it again: a graceful restart must not duplicate anything.
 */
describe('webhook delivery across a graceful relay restart', () => {
  const scenario = relayScenario({});

  it('delivers every event exactly once when the relay is stopped with SIGTERM mid-stream and started again', async () => {
    const { stack, receiver, publisher } = scenario.get();
    const { environmentId } = await subscribe(scenario.get());
    const total = 600;
    const events = Array.from({ length: total }, (_, i) => publisher.event(environmentId, `conn-${i % 20}`));

    // The first half streams in to a receiver that takes 200 ms to answer; the relay is stopped while
    // deliveries are out, and events go on arriving while it stops.
    receiver.mode = { kind: 'slow', delayMs: 200 };
    const stream = async (from: number, to: number) => {
      for (let i = from; i < to; i += 10) {
        await Promise.all(events.slice(i, i + 10).map((e) => publisher.publish(e)));
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const firstHundred = stream(0, 100);
    // Deliveries to one endpoint go out in waves (at most 16 at a time, answered together by this receiver):
    // the 20th answer can end a wave, so also wait for the next wave to be out before stopping the relay.
    const deadline = Date.now() + 30_000;
    while ((receiver.received.length < 20 || receiver.inFlight === 0) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 5));
    expect(receiver.inFlight).toBeGreaterThan(0);
    const stopping = stack.stopService('webhook-relay', 'SIGTERM');
    await firstHundred;
    await stream(100, total / 2);
    expect(await stopping).toBe(0);
    const beforeRestart = receiver.received.length;
    expect(beforeRestart).toBeLessThan(total / 2);

    // The second half waits on JetStream; a new relay takes up the rest.
    for (let i = total / 2; i < total; i += 50)
      await Promise.all(events.slice(i, i + 50).map((e) => publisher.publish(e)));
    await stack.startReplica('webhook-relay');
    const ids = () => new Set(receiver.received.map((r) => r.headers['webhook-id']));
    const allDeadline = Date.now() + 60_000;
    while (ids().size < total && Date.now() < allDeadline) await new Promise((r) => setTimeout(r, 100));
    expect(ids().size).toBe(total);
    // Nothing arrives twice, also once every event is acknowledged (nothing left for JetStream to redeliver)
    // and no delivery is left to send.
    await consumerDrained(stack.natsUrl, EVENT_CONSUMERS.relayAuth);
    await noDeliveryPending(stack);
    expect(receiver.received.length).toBe(total);
  });
});

/**
 * The same restart while stored retries, not first attempts, are out: the stopping relay must finish and
 * record the retries it is sending, and start no new one, or the next relay retakes their leases and sends
 * them again.
 */
describe('webhook retries across a graceful relay restart', () => {
  // No circuit breaker in the way: every event's first attempt must fail and be stored for retry.
  const scenario = relayScenario({
    SWITCHBOARD_WEBHOOK_RETRY_SCHEDULE: '0,1s,2s,4s,8s',
    SWITCHBOARD_WEBHOOK_BREAKER_FAILURES: '100000',
  });

  it('sends every stored retry once when the relay is stopped with SIGTERM while retries are out', async () => {
    const { stack, receiver, publisher } = scenario.get();
    const { environmentId } = await subscribe(scenario.get());
    const total = 100;
    const events = Array.from({ length: total }, (_, i) => publisher.event(environmentId, `conn-${i % 10}`));

    // Every first attempt fails: the deliveries are stored with a retry a second later.
    receiver.mode = { kind: 'status', status: 500 };
    await Promise.all(events.map((e) => publisher.publish(e)));
    await receiver.waitFor(total, '/hook', 30_000);
    // The retries meet a receiver that takes 400 ms to answer (200); the relay is stopped while they are out.
    const retriesFrom = receiver.received.length;
    receiver.mode = { kind: 'slow', delayMs: 400 };
    const started = Date.now() + 30_000;
    while (receiver.inFlight < 5 && Date.now() < started) await new Promise((r) => setTimeout(r, 5));
    expect(receiver.inFlight).toBeGreaterThan(0);
    expect(await stack.stopService('webhook-relay', 'SIGTERM')).toBe(0);
    await stack.startReplica('webhook-relay');

    const retried = () => receiver.received.slice(retriesFrom).map((r) => r.headers['webhook-id']);
    const deadline = Date.now() + 60_000;
    while (new Set(retried()).size < total && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    expect(new Set(retried()).size).toBe(total);
    // A retry whose outcome was lost stays pending until its lease runs out and it is sent again: once no
    // delivery is pending, every one was sent as often as it ever will be.
    await noDeliveryPending(stack);
    expect(retried()).toHaveLength(total);
  });
});
