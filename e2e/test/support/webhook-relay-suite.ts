import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { Nango } from '@nangohq/node';
import type { Stack } from '@switchboard/testing';
import { Webhook } from 'standardwebhooks';
import { call } from './http';
import { START_HOOK_TIMEOUT_MS } from './processes';
import { sendLinearWebhook, svixHeaders } from './webhook-events';
import { headerRecord, WebhookReceiver, type ReceivedWebhook } from './webhook-receiver';

/**
 * What the webhook-relay e2e files share: a receiver on loopback and the file's stack, the public API as
 * the account's secret key, and the checks a customer makes of a delivery.
 */

/** The webhook secret of the `linear` integration the files create (one per file). */
export const LINEAR_SECRET = `lin-${randomUUID()}`;

export interface WebhookRelaySuite {
  /** The file's stack and receiver, set once the start-up hook has run. */
  readonly stack: Stack;
  readonly receiver: WebhookReceiver;
  /** The environment's Standard Webhooks signing key, as the tests last read it. */
  signingKey: string;
  /** A request to the public API, as the account's secret key unless `key` is given. */
  api(method: string, path: string, body?: unknown, key?: string): ReturnType<typeof call>;
  /** Checks a delivery the way a customer would: Nango's client and a Standard Webhooks library. */
  expectSigned(hook: ReceivedWebhook): void;
  /** A Linear `Issue` webhook signed with `secret`. */
  linearWebhook(body: unknown, secret?: string): ReturnType<typeof sendLinearWebhook>;
  /** Points the primary URL at the receiver's `/primary` and reads the signing key, as the settings tests leave them. */
  receiveOnPrimary(): Promise<void>;
}

/**
 * Starts the receiver and the stack `start` gives before the file's tests and stops both after them.
 * The file passes its stack (`() => standardStack()`): the sequencer reads which one from its text.
 */
export function webhookRelaySuite(start: () => Promise<Stack>): WebhookRelaySuite {
  let stack: Stack | undefined;
  let receiver: WebhookReceiver | undefined;
  const started = <T>(value: T | undefined, name: string): T => {
    if (value === undefined) throw new Error(`the ${name} is not started yet`);
    return value;
  };

  const suite: WebhookRelaySuite = {
    get stack() {
      return started(stack, 'stack');
    },
    get receiver() {
      return started(receiver, 'receiver');
    },
    signingKey: '',
    api: (method, path, body, key) =>
      call(suite.stack.gatewayUrl, method, path, {
        key: key ?? suite.stack.secretKey,
        ...(body !== undefined ? { body } : {}),
      }),
    expectSigned: (hook) => {
      const headers = headerRecord(hook.headers);
      expect(
        new Nango({
          secretKey: suite.stack.secretKey,
          webhookSigningKey: suite.signingKey,
        }).verifyIncomingWebhookRequest(hook.body, headers),
      ).toBe(true);
      expect(() => new Webhook(suite.signingKey).verify(hook.body, headers)).not.toThrow();
      expect(headers['content-type']).toBe('application/json');
      expect(headers['webhook-id']).toMatch(/^msg_/);
    },
    linearWebhook: (body, secret = LINEAR_SECRET) => sendLinearWebhook(suite.stack, body, secret, 'Issue'),
    receiveOnPrimary: async () => {
      const res = await suite.api('PATCH', '/environment', {
        webhook_settings: { primary_url: `${suite.receiver.url}/primary` },
      });
      expect(res.status).toBe(200);
      suite.signingKey = (res.body as { data: { webhook_signing_key: string } }).data.webhook_signing_key;
    },
  };

  beforeAll(async () => {
    receiver = await new WebhookReceiver().start();
    stack = await start();
  }, START_HOOK_TIMEOUT_MS);

  afterAll(async () => {
    await stack?.stop();
    await receiver?.stop();
  });

  return suite;
}

export async function waitUntil(condition: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

export async function waitUntilAsync(condition: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The deliveries whose JSON body `match` accepts, once there is one. */
export async function waitForHook(
  receiver: WebhookReceiver,
  match: (body: Record<string, unknown>) => boolean,
  timeoutMs = 15_000,
) {
  let found: ReceivedWebhook[] = [];
  await waitUntil(() => {
    found = receiver.received.filter((r) => match(JSON.parse(r.body) as Record<string, unknown>));
    return found.length > 0;
  }, timeoutMs);
  return found;
}

/** Webhooks sent to the ingress of the file's environment, and the deliveries that carry them. */
export function catalogWebhooks(relay: WebhookRelaySuite) {
  /** Every delivery whose body carries `marker` (raw forwards and wrapped ones alike). */
  const deliveredWith = (marker: string) => relay.receiver.received.filter((r) => r.body.includes(marker));
  const send = (key: string, body: string, headers: Record<string, string>) =>
    fetch(`${relay.stack.gatewayUrl}/webhook/${relay.stack.environmentUuid}/${key}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });
  const createIntegration = async (provider: string, key: string, credentials: Record<string, unknown>) => {
    const res = await relay.api('POST', '/integrations', { provider, unique_key: key, credentials });
    expect(res.status).toBe(200);
  };
  /** An OAuth integration whose client credentials are dummies: only its webhook secret matters here. */
  const createOAuthIntegration = (provider: string, key: string, webhookSecret: string) =>
    createIntegration(provider, key, {
      type: 'OAUTH2',
      client_id: `${key}-client`,
      client_secret: `${key}-client-secret`,
      webhook_secret: webhookSecret,
    });
  const importConnection = async (key: string, body: Record<string, unknown>) => {
    const res = await relay.api('POST', '/connections', { provider_config_key: key, ...body });
    expect(res.status).toBe(201);
  };

  /**
   * The forged webhook is refused with 401 and never delivered; the signed one is answered 200 and
   * delivered. Returns the deliveries of the signed one.
   */
  const refusesForgedDeliversSigned = async (
    key: string,
    forged: { body: string; headers: Record<string, string>; marker: string },
    signed: { body: string; headers: Record<string, string>; marker: string },
  ) => {
    const refused = await send(key, forged.body, forged.headers);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({
      error: { code: 'invalid_signature', message: expect.any(String) },
    });
    expect((await send(key, signed.body, signed.headers)).status).toBe(200);
    await waitUntil(() => deliveredWith(signed.marker).length > 0);
    // Sent first and refused at once: had it been stored it would be out before the signed one.
    expect(deliveredWith(forged.marker)).toEqual([]);
    const hooks = deliveredWith(signed.marker);
    for (const hook of hooks) {
      relay.expectSigned(hook);
      expect(hook.headers['x-switchboard-webhook-verified']).toBe('true');
    }
    return hooks;
  };
  return {
    deliveredWith,
    send,
    createIntegration,
    createOAuthIntegration,
    importConnection,
    refusesForgedDeliversSigned,
  };
}

/**
 * Providers that route by an account id the provider itself gives the connection (token answer or
 * post-connect call; an import stands in for the OAuth dance or the API-key connect here). Each builds a signed webhook for an
 * account, the way the provider signs it.
 */
export const providerRouted: {
  provider: string;
  /** An API-key provider (integration and connections of that mode); OAuth 2 otherwise. */
  apiKey?: true;
  /** The connection config the provider's answer leaves on a connection of `account`. */
  config: (account: string) => Record<string, string>;
  secret: string;
  signed: (
    account: string,
    marker: string,
    secret: string,
  ) => { body: string; headers: Record<string, string> };
}[] = [
  {
    // websiteId from GET /1.0/authorization/website.
    provider: 'squarespace',
    config: (account) => ({ customappDescription: 'acme-app', websiteId: account }),
    secret: randomBytes(16).toString('hex'),
    signed: (account, marker, secret) => {
      const body = JSON.stringify({
        id: randomUUID(),
        websiteId: account,
        topic: 'order.create',
        data: { marker },
      });
      const signature = createHmac('sha256', Buffer.from(secret, 'hex')).update(body).digest('hex');
      return { body, headers: { 'squarespace-signature': signature } };
    },
  },
  {
    // organization_id from the token answer.
    provider: 'close',
    config: (account) => ({ organization_id: account }),
    secret: randomBytes(32).toString('hex'),
    signed: (account, marker, secret) => {
      const body = JSON.stringify({
        subscription_id: `whsub_${randomUUID()}`,
        event: {
          id: `ev_${randomUUID()}`,
          organization_id: account,
          object_type: 'lead',
          action: 'created',
          data: { marker },
        },
      });
      const timestamp = String(Math.floor(Date.now() / 1000));
      const hash = createHmac('sha256', Buffer.from(secret, 'hex'))
        .update(`${timestamp}${body}`)
        .digest('hex');
      return { body, headers: { 'close-sig-hash': hash, 'close-sig-timestamp': timestamp } };
    },
  },
  {
    // accountId from GET /oauth/userinfo (the account flagged is_default).
    provider: 'docusign',
    config: (account) => ({ accountId: account }),
    secret: `docusign-${randomUUID()}`,
    signed: (account, marker, secret) => {
      const body = JSON.stringify({
        event: 'envelope-completed',
        apiVersion: 'v2.1',
        retryCount: 0,
        generatedDateTime: new Date().toISOString(),
        data: { accountId: account, userId: randomUUID(), envelopeId: marker },
      });
      const signature = createHmac('sha256', secret).update(body).digest('base64');
      return { body, headers: { 'x-docusign-signature-1': signature } };
    },
  },
  {
    // instance_id from GET /v1/instance, asked with the secret key (connect-security shows the connect).
    provider: 'clerk',
    apiKey: true,
    config: (account) => ({ instance_id: account }),
    secret: `whsec_${randomBytes(24).toString('base64')}`,
    signed: (account, marker, secret) => {
      const body = JSON.stringify({
        data: { id: `user_${marker}`, object: 'user' },
        instance_id: account,
        object: 'event',
        timestamp: Date.now(),
        type: 'user.created',
      });
      return { body, headers: svixHeaders(secret, body) };
    },
  },
  {
    // companyUuid from GET /v1/token_info (resource.uuid).
    provider: 'gusto-demo',
    config: (account) => ({ companyUuid: account }),
    secret: `gusto-${randomUUID()}`,
    signed: (account, marker, secret) => {
      const body = JSON.stringify({
        uuid: randomUUID(),
        event_type: 'employee.created',
        resource_type: 'Company',
        resource_uuid: account,
        entity_type: 'Employee',
        entity_uuid: marker,
        timestamp: Math.floor(Date.now() / 1000),
      });
      const signature = createHmac('sha256', secret).update(body).digest('hex');
      return { body, headers: { 'x-gusto-signature': signature } };
    },
  },
];
