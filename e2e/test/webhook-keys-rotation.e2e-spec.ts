import { randomBytes } from 'node:crypto';
import { runRewrapCli, startStack, type RunningService, type Stack } from '@switchboard/testing';
import { Webhook } from 'standardwebhooks';
import { call } from './support/http';
import { AuthEventPublisher } from './support/webhook-events';
import { headerRecord, WebhookReceiver } from './support/webhook-receiver';

/**
 * Rotating the master key under the webhook relay's sealed signing keys: roll the relay to the keyring
 * `old,new`, rewrap with its `rewrap-cli`, roll it to the new key alone. Receivers notice nothing: every
 * delivery is still signed with the signing keys they were given before (current and, within a signing-key
 * rotation's grace period, previous).
 */

describe('master key rotation of webhook signing keys', () => {
  let stack: Stack;
  let receiver: WebhookReceiver;
  let publisher: AuthEventPublisher;
  let environmentId: number;

  const api = (method: string, path: string, body?: unknown) =>
    call(stack.gatewayUrl, method, path, { key: stack.secretKey, ...(body !== undefined ? { body } : {}) });

  const rewrap = (keyring: string) =>
    runRewrapCli('apps/webhook-relay/dist/rewrap-cli.js', {
      databaseUrl: stack.databaseUrl,
      masterKeys: keyring,
      batchSize: 10,
      environmentId,
    });

  /** Replaces the running relay process(es) with one using `keyring`. */
  const rollRelay = async (keyring: string): Promise<RunningService> => {
    const previous = stack.replicas['webhook-relay'].filter(
      (r) => r.process.exitCode === null && r.process.signalCode === null,
    );
    const next = await stack.startReplica('webhook-relay', { SWITCHBOARD_MASTER_KEYS: keyring });
    for (const old of previous) {
      const exited = new Promise((resolve) => old.process.once('exit', resolve));
      old.process.kill('SIGTERM');
      await exited;
    }
    return next;
  };

  /** Publishes an auth event and answers the headers and body of its delivery to the receiver. */
  const deliver = async () => {
    const before = receiver.on('/hook').length;
    await publisher.publish(publisher.event(environmentId, `conn-${randomBytes(4).toString('hex')}`));
    const hook = (await receiver.waitFor(before + 1, '/hook', 30_000)).at(-1)!;
    return { body: hook.body, headers: headerRecord(hook.headers) };
  };

  beforeAll(async () => {
    receiver = await new WebhookReceiver().start();
    stack = await startStack({
      // The API (the gateway, and auth-connect for its keys) and the relay are all these tests touch.
      services: ['gateway', 'auth-connect', 'webhook-relay'],
      serviceEnv: {
        'webhook-relay': {
          SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1',
          SWITCHBOARD_WEBHOOK_RETRY_SCHEDULE: '0,300ms,600ms',
          SWITCHBOARD_WEBHOOK_POLL_INTERVAL: '100ms',
        },
      },
    });
    publisher = await AuthEventPublisher.connect(stack.natsUrl);
    const settings = await api('PATCH', '/environment', {
      webhook_settings: { primary_url: `${receiver.url}/hook` },
    });
    expect(settings.status).toBe(200);
    environmentId = (settings.body as { data: { id: number } }).data.id;
  }, 180_000);

  afterAll(async () => {
    await publisher?.close();
    await stack?.stop();
    await receiver?.stop();
  });

  it('keeps signing deliveries with the same keys after the relay moved to the new master key alone', async () => {
    // A signing-key rotation in its grace period: both the current and the previous key are sealed.
    const first = (await api('GET', '/environment')).body as { data: { webhook_signing_key: string } };
    const rotated = await api('POST', '/environment/webhook-signing-key/rotate');
    expect(rotated.status).toBe(200);
    const current = (rotated.body as { data: { webhook_signing_key: string } }).data.webhook_signing_key;
    const previous = first.data.webhook_signing_key;
    const verifies = (key: string, hook: { body: string; headers: Record<string, string> }) => {
      expect(() => new Webhook(key).verify(hook.body, hook.headers)).not.toThrow();
    };
    const beforeRotation = await deliver();
    verifies(current, beforeRotation);
    verifies(previous, beforeRotation);

    const oldKeyring = stack.envOf('webhook-relay').SWITCHBOARD_MASTER_KEYS!;
    const oldVersion = Math.max(...oldKeyring.split(',').map((entry) => Number(entry.split(':')[0])));
    const newKey = `${oldVersion + 1}:${randomBytes(32).toString('base64')}`;

    await rollRelay(`${oldKeyring},${newKey}`);
    expect(await rewrap(`${oldKeyring},${newKey}`)).toEqual({
      currentVersion: oldVersion + 1,
      scanned: 2,
      rewrapped: 2,
      changedConcurrently: 0,
      failed: [],
      remaining: 0,
    });
    expect(await rewrap(`${oldKeyring},${newKey}`)).toMatchObject({ scanned: 0, rewrapped: 0, remaining: 0 });

    await rollRelay(newKey);
    const afterRotation = await deliver();
    verifies(current, afterRotation);
    verifies(previous, afterRotation);
    expect(
      ((await api('GET', '/environment')).body as { data: { webhook_signing_key: string } }).data
        .webhook_signing_key,
    ).toBe(current);
  }, 120_000);
});
