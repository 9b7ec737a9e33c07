import { createHmac, randomUUID } from 'node:crypto';
import type { Stack } from '@switchboard/testing';
import { providerWebhooksSettled } from './support/barriers';
import { call } from './support/http';
import { START_HOOK_TIMEOUT_MS } from './support/processes';
import { standardStackWithGateway } from './support/standard-stack';
import { WebhookReceiver } from './support/webhook-receiver';
import { linearIntegration, sendLinearWebhook } from './support/webhook-events';

/**
 * The gateway verifies and stores provider webhooks itself by default (webhook-relay-forwarding.e2e-spec.ts
 * covers that mode); with `SWITCHBOARD_WEBHOOK_INGRESS_MODE=remote` it hands them to the relay, and the
 * provider must get the same answers: 200 success once stored, 401 invalid_signature and a refused row
 * otherwise.
 */

const LINEAR_SECRET = `lin-${randomUUID()}`;

describe('provider webhooks with the ingress in the relay (remote mode)', () => {
  let stack: Stack;
  let receiver: WebhookReceiver;

  const api = (method: string, path: string, body?: unknown) =>
    call(stack.gatewayUrl, method, path, { key: stack.secretKey, ...(body !== undefined ? { body } : {}) });

  const linearWebhook = (body: unknown, secret: string) => sendLinearWebhook(stack, body, secret);

  beforeAll(async () => {
    receiver = await new WebhookReceiver().start();
    // The standard stack, through a gateway of this file's own in remote ingress mode.
    stack = await standardStackWithGateway({ SWITCHBOARD_WEBHOOK_INGRESS_MODE: 'remote' });
    expect(
      (await api('PATCH', '/environment', { webhook_settings: { primary_url: `${receiver.url}/primary` } }))
        .status,
    ).toBe(200);
    const linear = await api('POST', '/integrations', linearIntegration(LINEAR_SECRET));
    expect(linear.status).toBe(200);
  }, START_HOOK_TIMEOUT_MS);

  afterAll(async () => {
    await stack?.stop();
    await receiver?.stop();
  });

  it('stores and forwards a verified webhook, and refuses a forged one with 401 and a refused row', async () => {
    const event = {
      action: 'remove',
      type: 'Comment',
      organizationId: 'org-nobody',
      webhookTimestamp: Date.now(),
    };
    const ok = await linearWebhook(event, LINEAR_SECRET);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ status: 'success' });
    const [hook] = await receiver.waitFor(1, '/primary');
    expect(JSON.parse(hook!.body)).toEqual(event);

    const forged = await linearWebhook({ ...event, forged: true }, 'not-the-secret');
    expect(forged.status).toBe(401);
    expect(await forged.json()).toEqual({
      error: { code: 'invalid_signature', message: expect.any(String) },
    });
    const log = (await api('GET', '/environment/webhook-deliveries?status=refused&limit=10')).body as {
      data: { status: string; last_error: string }[];
    };
    expect(log.data).toEqual([
      expect.objectContaining({
        status: 'refused',
        last_error: 'signature not verified: signature mismatch',
      }),
    ]);
  });

  it('dead-letters a verified webhook nesting 10,000 levels deep in the relay too: 200, a dead_lettered row, nothing forwarded', async () => {
    const before = receiver.received.length;
    const text = JSON.stringify({
      action: 'create',
      organizationId: 'org-deep',
      webhookTimestamp: Date.now(),
      data: '@',
    }).replace('"@"', '['.repeat(10_000) + ']'.repeat(10_000));
    const res = await fetch(`${stack.gatewayUrl}/webhook/${stack.environmentUuid}/linear`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'linear-signature': createHmac('sha256', LINEAR_SECRET).update(text).digest('hex'),
        'linear-delivery': randomUUID(),
      },
      body: text,
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'success' });
    const log = (await api('GET', '/environment/webhook-deliveries?status=dead_lettered&limit=10')).body as {
      data: { status: string; provider_config_key: string; last_error: string }[];
    };
    expect(log.data).toEqual([
      expect.objectContaining({
        status: 'dead_lettered',
        provider_config_key: 'linear',
        last_error: 'The webhook body nests arrays or objects more than 64 levels deep',
      }),
    ]);
    // Whatever the relay could have done with it is done: a forward would have been received by now.
    await providerWebhooksSettled(stack);
    expect(receiver.received.length).toBe(before);
  });
});
