import { execFile } from 'node:child_process';
import { createHash, createHmac, generateKeyPairSync, randomBytes, randomUUID, sign } from 'node:crypto';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Nango } from '@nangohq/node';
import { EVENT_CONSUMERS } from '@switchboard/contracts';
import { repoRoot, type Stack } from '@switchboard/testing';
import { SignJWT } from 'jose';
import { Webhook } from 'standardwebhooks';
import { consumerDrained } from './support/barriers';
import { call, createKey, expectError } from './support/http';
import {
  seedAccount,
  START_HOOK_TIMEOUT_MS,
  startGateway,
  waitFor,
  type ExtraProcess,
} from './support/processes';
import {
  AuthEventPublisher,
  linearIntegration,
  sendLinearWebhook,
  standardWebhookHeaders,
  svixHeaders,
} from './support/webhook-events';
import { headerRecord, WebhookReceiver, type ReceivedWebhook } from './support/webhook-receiver';
import { standardStack } from './support/standard-stack';

/**
 * The webhook relay through the public API: environment webhook settings and signing key, a provider
 * webhook in (signature checked on the raw bytes) and a signed `forward` out to a receiver on loopback,
 * an `auth` webhook for a connection made through a connect session, and the delivery log.
 */

const LINEAR_SECRET = `lin-${randomUUID()}`;
const SLACK_SECRET = `slack-${randomUUID()}`;

describe('webhook relay', () => {
  let stack: Stack;
  let receiver: WebhookReceiver;
  let signingKey: string;

  const api = (method: string, path: string, body?: unknown, key?: string) =>
    call(stack.gatewayUrl, method, path, {
      key: key ?? stack.secretKey,
      ...(body !== undefined ? { body } : {}),
    });

  /** Checks a delivery the way a customer would: Nango's client and a Standard Webhooks library. */
  const expectSigned = (hook: ReceivedWebhook) => {
    const headers = headerRecord(hook.headers);
    expect(
      new Nango({ secretKey: stack.secretKey, webhookSigningKey: signingKey }).verifyIncomingWebhookRequest(
        hook.body,
        headers,
      ),
    ).toBe(true);
    expect(() => new Webhook(signingKey).verify(hook.body, headers)).not.toThrow();
    expect(headers['content-type']).toBe('application/json');
    expect(headers['webhook-id']).toMatch(/^msg_/);
  };

  const linearWebhook = (body: unknown, secret = LINEAR_SECRET) =>
    sendLinearWebhook(stack, body, secret, 'Issue');

  beforeAll(async () => {
    receiver = await new WebhookReceiver().start();
    stack = await standardStack();
  }, START_HOOK_TIMEOUT_MS);

  afterAll(async () => {
    await stack?.stop();
    await receiver?.stop();
  });

  describe('settings', () => {
    it('shows the environment, default toggles and a Standard Webhooks signing key separate from the secret key', async () => {
      const res = await api('GET', '/environment');
      expect(res.status).toBe(200);
      const data = (res.body as { data: Record<string, unknown> }).data;
      expect(data).toMatchObject({
        uuid: stack.environmentUuid,
        webhook_settings: {
          primary_url: null,
          secondary_url: null,
          on_auth_creation: true,
          on_auth_refresh_error: true,
          on_sync_error: true,
          on_sync_completion_always: false,
          on_async_action_completion: true,
        },
        previous_webhook_signing_key_expires_at: null,
        disabled_webhook_urls: [],
      });
      signingKey = data.webhook_signing_key as string;
      expect(signingKey).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(signingKey).not.toContain(stack.secretKey);
      // Stable: a second read shows the same key.
      expect(
        ((await api('GET', '/environment')).body as { data: { webhook_signing_key: string } }).data
          .webhook_signing_key,
      ).toBe(signingKey);
    });

    it('needs environment:settings:read to read and environment:settings:write to change', async () => {
      const reader = await createKey(stack.gatewayUrl, stack.secretKey, ['environment:settings:read']);
      expect((await api('GET', '/environment', undefined, reader)).status).toBe(200);
      expectError(
        await api('PATCH', '/environment', { webhook_settings: { on_sync_error: false } }, reader),
        403,
        'forbidden',
      );
      expectError(
        await api('POST', '/environment/webhook-signing-key/rotate', undefined, reader),
        403,
        'forbidden',
      );
      const writer = await createKey(stack.gatewayUrl, stack.secretKey, ['environment:settings:write']);
      expectError(await api('GET', '/environment', undefined, writer), 403, 'forbidden');
    });

    it('changes only the fields passed and refuses URLs the egress policy blocks, storing nothing', async () => {
      const res = await api('PATCH', '/environment', {
        webhook_settings: {
          primary_url: `${receiver.url}/primary`,
          secondary_url: `${receiver.url}/secondary`,
          on_sync_completion_always: true,
        },
      });
      expect(res.status).toBe(200);
      expect((res.body as { data: { webhook_settings: unknown } }).data.webhook_settings).toMatchObject({
        primary_url: `${receiver.url}/primary`,
        secondary_url: `${receiver.url}/secondary`,
        on_sync_completion_always: true,
        on_auth_creation: true,
      });

      // No request is made: the address is judged from the URL alone.
      const refused = expectError(
        await api('PATCH', '/environment', {
          webhook_settings: { secondary_url: 'http://169.254.169.254/latest/meta-data' },
        }),
        400,
        'invalid_body',
      );
      expect(refused.errors?.[0]?.path).toEqual(['webhook_settings', 'secondary_url']);
      expectError(
        await api('PATCH', '/environment', { webhook_settings: { primary_url: 'ftp://example.com/x' } }),
        400,
        'invalid_body',
      );
      expectError(
        await api('PATCH', '/environment', { webhook_settings: { unknown: true } }),
        400,
        'invalid_body',
      );
      const after = (await api('GET', '/environment')).body as {
        data: { webhook_settings: { secondary_url: string } };
      };
      expect(after.data.webhook_settings.secondary_url).toBe(`${receiver.url}/secondary`);

      await api('PATCH', '/environment', { webhook_settings: { secondary_url: null } });
    });
  });

  describe('the CLI', () => {
    it('shows and changes the webhook settings', async () => {
      const cli = (...args: string[]) =>
        promisify(execFile)(process.execPath, [
          join(repoRoot(), 'packages/cli/dist/main.js'),
          '--host',
          stack.gatewayUrl,
          '--key',
          stack.secretKey,
          ...args,
        ]);
      const set = await cli('webhooks', 'set', '--on-sync-error', 'false');
      expect(set.stdout).toContain('on_sync_error: false');
      const shown = await cli('webhooks', 'show');
      expect(shown.stdout).toContain(`primary_url: ${receiver.url}/primary`);
      expect(shown.stdout).toContain(`webhook_signing_key: ${signingKey}`);
      await expect(cli('webhooks', 'set', '--primary-url', 'http://10.0.0.1/x')).rejects.toThrow(
        /400 invalid_body/,
      );
      await cli('webhooks', 'set', '--on-sync-error', 'true');
    });
  });

  describe('provider webhooks in', () => {
    beforeAll(async () => {
      const linear = await api('POST', '/integrations', linearIntegration(LINEAR_SECRET));
      expect(linear.status).toBe(200);
      const slack = await api('POST', '/integrations', {
        provider: 'slack',
        unique_key: 'slack',
        credentials: {
          type: 'OAUTH2',
          client_id: 'sl-client',
          client_secret: 'sl-client-secret',
          webhook_secret: SLACK_SECRET,
        },
      });
      expect(slack.status).toBe(200);
      for (const [id, override] of [
        ['conn-org-1', undefined],
        ['conn-org-1-override', `${receiver.url}/override`],
      ] as const) {
        const res = await api('POST', '/connections', {
          provider_config_key: 'linear',
          connection_id: id,
          credentials: { type: 'OAUTH2', access_token: `tok-${id}` },
          connection_config: { organizationId: 'org-1' },
          ...(override ? { webhook_url_override: override } : {}),
        });
        expect(res.status).toBe(201);
      }
    });

    it('forwards a verified webhook to each matched connection, signed, and to the override alone when set', async () => {
      const event = {
        action: 'create',
        type: 'Issue',
        organizationId: 'org-1',
        data: { id: 'iss-1', title: 'Hello' },
        webhookTimestamp: Date.now(),
      };
      const res = await linearWebhook(event);
      expect(res.status).toBe(200);

      const forwards = () =>
        receiver.received.filter((r) => (JSON.parse(r.body) as { type?: string }).type === 'forward');
      await waitUntil(() => forwards().length >= 2);
      await new Promise((r) => setTimeout(r, 300));
      const got = forwards();
      expect(
        got.map((r) => [r.path, (JSON.parse(r.body) as { connectionId: string }).connectionId]).sort(),
      ).toEqual([
        ['/override', 'conn-org-1-override'],
        ['/primary', 'conn-org-1'],
      ]);
      for (const hook of got) {
        expectSigned(hook);
        expect(JSON.parse(hook.body)).toEqual({
          from: 'linear',
          type: 'forward',
          providerConfigKey: 'linear',
          connectionId: expect.any(String),
          payload: event,
          verified: true,
        });
        expect(hook.headers['x-switchboard-webhook-verified']).toBe('true');
        // Compact JSON with sorted keys, and the provider's own headers come along.
        expect(hook.body).toBe(JSON.stringify(sortKeys(JSON.parse(hook.body))));
        expect(hook.headers['linear-event']).toBe('Issue');
        expect(hook.headers.authorization).toBeUndefined();
      }
    });

    it('forwards a webhook no connection matches as the raw provider payload', async () => {
      const before = receiver.on('/primary').length;
      const event = {
        action: 'remove',
        type: 'Comment',
        organizationId: 'org-nobody',
        webhookTimestamp: Date.now(),
      };
      expect((await linearWebhook(event)).status).toBe(200);
      const [hook] = (await receiver.waitFor(before + 1, '/primary')).slice(before);
      expectSigned(hook!);
      expect(JSON.parse(hook!.body)).toEqual(event);
    });

    /** Refused requests counted in the delivery log for linear with this reason (rows aggregate them). */
    const refusedCount = async (reason: string) => {
      const log = (await api('GET', '/environment/webhook-deliveries?status=refused&limit=100')).body as {
        data: { provider_config_key: string; last_error: string; attempts: number }[];
      };
      const rows = log.data.filter(
        (d) => d.provider_config_key === 'linear' && d.last_error === `signature not verified: ${reason}`,
      );
      return { rows: rows.length, count: rows.reduce((n, d) => n + d.attempts, 0) };
    };

    /** The newest forward the relay planned for the environment of `key` (refused requests aside). */
    const newestForward = async (key = stack.secretKey) => {
      const log = (await api('GET', '/environment/webhook-deliveries?type=forward&limit=100', undefined, key))
        .body as { data: { id: number; status: string }[] };
      return Math.max(0, ...log.data.filter((d) => d.status !== 'refused').map((d) => d.id));
    };

    it('refuses a bad signature with 401, forwards nothing, and shows it in the delivery log as refused', async () => {
      const before = receiver.received.length;
      const forwardBefore = await newestForward();
      const mismatchBefore = await refusedCount('signature mismatch');
      const missingBefore = await refusedCount('missing linear-signature header');
      const forged = {
        action: 'create',
        organizationId: 'org-1',
        forged: 'FORGED-PAYLOAD',
        webhookTimestamp: Date.now(),
      };
      const res = await linearWebhook(forged, 'not-the-secret');
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ error: { code: 'invalid_signature', message: expect.any(String) } });
      // Unsigned altogether: refused the same way.
      const unsigned = await fetch(`${stack.gatewayUrl}/webhook/${stack.environmentUuid}/linear`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(forged),
      });
      expect(unsigned.status).toBe(401);
      // Every stored webhook routed, and no forward planned since: nothing is on its way to the receiver.
      await consumerDrained(stack.natsUrl, EVENT_CONSUMERS.relayProviderWebhook);
      expect(await newestForward()).toBe(forwardBefore);
      expect(receiver.received.length).toBe(before);

      expect((await refusedCount('signature mismatch')).count).toBe(mismatchBefore.count + 1);
      expect((await refusedCount('missing linear-signature header')).count).toBe(missingBefore.count + 1);
      const log = (await api('GET', '/environment/webhook-deliveries?status=refused&limit=100')).body as {
        data: { id: number; status: string; type: string; provider_config_key: string; last_error: string }[];
      };
      const [latest] = log.data;
      expect(latest).toMatchObject({
        status: 'refused',
        type: 'forward',
        provider_config_key: 'linear',
        attempts: expect.any(Number),
        last_error: expect.stringMatching(/^signature not verified: missing linear-signature header$/),
      });
      // The sender's payload is not kept, and a refused webhook cannot be pushed out by a redelivery.
      const detail = await api('GET', `/environment/webhook-deliveries/${latest!.id}`);
      expect(detail.status).toBe(200);
      expect(JSON.stringify(detail.body)).not.toContain('FORGED-PAYLOAD');
      expectError(
        await api('POST', `/environment/webhook-deliveries/${latest!.id}/redeliver`),
        409,
        'conflict',
      );
      expect(await newestForward()).toBe(forwardBefore);
      expect(receiver.received.length).toBe(before);
    });

    it('a flood of bad signatures adds a bounded number of refused rows, whose count shows every request', async () => {
      const FLOOD = 60;
      const before = await refusedCount('signature mismatch');
      for (let batch = 0; batch < FLOOD / 20; batch++) {
        const answers = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            linearWebhook(
              { action: 'create', organizationId: 'org-1', n: batch * 20 + i, webhookTimestamp: Date.now() },
              'not-the-secret',
            ),
          ),
        );
        expect(answers.map((a) => a.status)).toEqual(Array(20).fill(401));
      }
      const after = await waitFor(
        'every refusal counted',
        async () => {
          const now = await refusedCount('signature mismatch');
          return now.count >= before.count + FLOOD ? now : undefined;
        },
        10_000,
      );
      expect(after.count).toBe(before.count + FLOOD);
      // One row per integration, reason and hour: at most one more (the hour may turn during the flood).
      expect(after.rows - before.rows).toBeLessThanOrEqual(1);
      const log = (await api('GET', '/environment/webhook-deliveries?status=refused&limit=100')).body as {
        data: { id: number; last_error: string }[];
      };
      const row = log.data.find((d) => d.last_error === 'signature not verified: signature mismatch')!;
      const detail = (await api('GET', `/environment/webhook-deliveries/${row.id}`)).body as {
        data: { body: string };
      };
      expect(JSON.parse(detail.data.body)).toMatchObject({
        reason: 'signature mismatch',
        count: expect.any(Number),
        first_received_at: expect.any(String),
        last_received_at: expect.any(String),
      });
    });

    it('forwards a webhook of an integration without a webhook secret marked verified: false, whatever the sender claims', async () => {
      const created = await api('POST', '/integrations', {
        provider: 'linear',
        unique_key: 'linear-unsigned',
        credentials: { type: 'OAUTH2', client_id: 'lin-client', client_secret: 'lin-client-secret' },
      });
      expect(created.status).toBe(200);
      expect(
        (
          await api('POST', '/connections', {
            provider_config_key: 'linear-unsigned',
            connection_id: 'conn-unsigned',
            credentials: { type: 'OAUTH2', access_token: 'tok-unsigned' },
            connection_config: { organizationId: 'org-unsigned' },
          })
        ).status,
      ).toBe(201);
      const forwards = () =>
        receiver
          .on('/primary')
          .filter(
            (r) => (JSON.parse(r.body) as { providerConfigKey?: string; type?: string }).type === 'forward',
          )
          .filter(
            (r) =>
              (JSON.parse(r.body) as { providerConfigKey?: string }).providerConfigKey === 'linear-unsigned',
          );
      const event = {
        action: 'create',
        type: 'Issue',
        organizationId: 'org-unsigned',
        webhookTimestamp: Date.now(),
      };
      const res = await fetch(`${stack.gatewayUrl}/webhook/${stack.environmentUuid}/linear-unsigned`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-switchboard-webhook-verified': 'true' },
        body: JSON.stringify(event),
      });
      expect(res.status).toBe(200);
      await waitUntil(() => forwards().length >= 1);
      const [hook] = forwards();
      expectSigned(hook!);
      expect(JSON.parse(hook!.body)).toEqual({
        from: 'linear',
        type: 'forward',
        providerConfigKey: 'linear-unsigned',
        connectionId: 'conn-unsigned',
        payload: event,
        verified: false,
      });
      expect(hook!.headers['x-switchboard-webhook-verified']).toBe('false');
    });

    it("answers Slack's url_verification handshake with the challenge, only when it is signed", async () => {
      const body = JSON.stringify({ token: 'x', challenge: 'c-' + randomUUID(), type: 'url_verification' });
      const ts = String(Math.floor(Date.now() / 1000));
      const sig = `v0=${createHmac('sha256', SLACK_SECRET).update(`v0:${ts}:${body}`).digest('hex')}`;
      const url = `${stack.gatewayUrl}/webhook/${stack.environmentUuid}/slack`;
      const ok = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-slack-request-timestamp': ts,
          'x-slack-signature': sig,
        },
        body,
      });
      expect(ok.status).toBe(200);
      expect(await ok.text()).toBe((JSON.parse(body) as { challenge: string }).challenge);
      const unsigned = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      expect(unsigned.status).toBe(401);
    });

    it('answers unknown environments and integrations with 404 and a malformed UUID with 400', async () => {
      const post = (path: string) =>
        fetch(`${stack.gatewayUrl}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{}',
        });
      const codeOf = async (res: Response) => ({
        status: res.status,
        code: ((await res.json()) as { error: { code: string } }).error.code,
      });
      expect(await codeOf(await post(`/webhook/${randomUUID()}/linear`))).toEqual({
        status: 404,
        code: 'unknown_environment',
      });
      expect(await codeOf(await post(`/webhook/${stack.environmentUuid}/nope`))).toEqual({
        status: 404,
        code: 'unknown_provider_config',
      });
      expect(await codeOf(await post('/webhook/not-a-uuid/linear'))).toEqual({
        status: 400,
        code: 'invalid_uri_params',
      });
    });
  });

  describe('signature schemes of the catalog', () => {
    beforeAll(async () => {
      // As the settings tests leave them, so these also run alone (-t).
      const res = await api('PATCH', '/environment', {
        webhook_settings: { primary_url: `${receiver.url}/primary` },
      });
      expect(res.status).toBe(200);
      signingKey = (res.body as { data: { webhook_signing_key: string } }).data.webhook_signing_key;
    });

    /** Every delivery whose body carries `marker` (raw forwards and wrapped ones alike). */
    const deliveredWith = (marker: string) => receiver.received.filter((r) => r.body.includes(marker));
    const send = (key: string, body: string, headers: Record<string, string>) =>
      fetch(`${stack.gatewayUrl}/webhook/${stack.environmentUuid}/${key}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body,
      });
    const createIntegration = async (provider: string, key: string, credentials: Record<string, unknown>) => {
      const res = await api('POST', '/integrations', { provider, unique_key: key, credentials });
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
      const res = await api('POST', '/connections', { provider_config_key: key, ...body });
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
        expectSigned(hook);
        expect(hook.headers['x-switchboard-webhook-verified']).toBe('true');
      }
      return hooks;
    };

    it('verifies Dixa webhooks with the hex-decoded key an API-key integration stores as its webhook secret', async () => {
      const secret = randomBytes(16).toString('hex');
      await createIntegration('dixa', 'dixa-hooks', { type: 'API_KEY', webhook_secret: secret });
      const read = await api('GET', '/integrations/dixa-hooks?include=credentials');
      expect((read.body as { data: { credentials: unknown } }).data.credentials).toEqual({
        type: 'API_KEY',
        webhook_secret: secret,
      });
      const event = (marker: string) =>
        JSON.stringify({ event_id: randomUUID(), event_fqn: 'CONVERSATION_CREATED', data: { marker } });
      const dixaSigned = (body: string, key: Buffer | string) => {
        const t = String(Date.now());
        const v1 = createHmac('sha256', key).update(`${t}.${body}`).digest('hex');
        return { 'x-dixa-signature': `t=${t},v1=${v1}` };
      };
      const forged = { marker: `forged-${randomUUID()}`, body: '', headers: {} };
      forged.body = event(forged.marker);
      // Keyed by the secret's text instead of its bytes: what a recipe without `secret_encoding` would check.
      forged.headers = dixaSigned(forged.body, secret);
      const signed = { marker: `dixa-${randomUUID()}`, body: '', headers: {} };
      signed.body = event(signed.marker);
      signed.headers = dixaSigned(signed.body, Buffer.from(secret, 'hex'));
      const [hook] = await refusesForgedDeliversSigned('dixa-hooks', forged, signed);
      // Nothing names the connection: the raw payload goes to the environment's URL.
      expect(hook!.path).toBe('/primary');
      expect(JSON.parse(hook!.body)).toEqual(JSON.parse(signed.body));
    });

    it('routes a Dixa webhook by its organization id to the connection whose metadata names it, and an unknown one unrouted', async () => {
      const secret = randomBytes(16).toString('hex');
      await createIntegration('dixa', 'dixa-routed', { type: 'API_KEY', webhook_secret: secret });
      const orgA = `org-${randomUUID()}`;
      for (const id of ['dixa-a', 'dixa-b']) {
        await importConnection('dixa-routed', {
          connection_id: id,
          credentials: { type: 'API_KEY', apiKey: `key-${id}` },
          connection_config: { apiType: 'dev' },
          webhook_url_override: `${receiver.url}/${id}`,
        });
      }
      // An API key names no organization: the customer records it, as Nango's setMetadata does.
      for (const [id, organizationId] of [
        ['dixa-a', orgA],
        ['dixa-b', `org-${randomUUID()}`],
      ] as const) {
        const res = await api('POST', '/connections/metadata', {
          connection_id: id,
          provider_config_key: 'dixa-routed',
          metadata: { organizationId },
        });
        expect(res.status).toBe(201);
      }
      const sendEvent = async (organizationId: string, marker: string) => {
        const body = JSON.stringify({
          event_id: randomUUID(),
          event_fqn: 'CONVERSATION_CREATED',
          organization: { id: organizationId, name: 'Acme' },
          data: { marker },
        });
        const t = String(Date.now());
        const v1 = createHmac('sha256', Buffer.from(secret, 'hex')).update(`${t}.${body}`).digest('hex');
        expect((await send('dixa-routed', body, { 'x-dixa-signature': `t=${t},v1=${v1}` })).status).toBe(200);
        return body;
      };

      const marker = `dixa-a-${randomUUID()}`;
      const body = await sendEvent(orgA, marker);
      await waitUntil(() => deliveredWith(marker).length > 0);
      const unknownMarker = `dixa-nobody-${randomUUID()}`;
      const unknownBody = await sendEvent(`org-${randomUUID()}`, unknownMarker);
      await waitUntil(() => deliveredWith(unknownMarker).length > 0);
      // The unknown one was sent after and is out: anything else for the first would be out by now too.
      const hooks = deliveredWith(marker);
      expect(hooks.map((hook) => hook.path)).toEqual(['/dixa-a']);
      expect(JSON.parse(hooks[0]!.body)).toEqual({
        from: 'dixa',
        type: 'forward',
        providerConfigKey: 'dixa-routed',
        connectionId: 'dixa-a',
        payload: JSON.parse(body),
        verified: true,
      });
      const unrouted = deliveredWith(unknownMarker);
      expect(unrouted.map((hook) => hook.path)).toEqual(['/primary']);
      expect(JSON.parse(unrouted[0]!.body)).toEqual(JSON.parse(unknownBody));
    });

    /**
     * Providers that route by an account id the provider itself gives the connection (token answer or
     * post-connect call; an import stands in for the OAuth dance or the API-key connect here). Each builds a signed webhook for an
     * account, the way the provider signs it.
     */
    const providerRouted: {
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

    it.each(providerRouted)(
      'routes a signed $provider webhook to the connection of the account it names only',
      async ({ provider, apiKey, config, secret, signed }) => {
        const key = `${provider}-by-account`;
        if (apiKey) await createIntegration(provider, key, { type: 'API_KEY', webhook_secret: secret });
        else await createOAuthIntegration(provider, key, secret);
        const accountA = `acct-${randomUUID()}`;
        for (const [id, account] of [
          [`${provider}-a`, accountA],
          [`${provider}-b`, `acct-${randomUUID()}`],
        ] as const) {
          await importConnection(key, {
            connection_id: id,
            credentials: apiKey
              ? { type: 'API_KEY', apiKey: `key-${id}` }
              : { type: 'OAUTH2', access_token: `tok-${id}` },
            connection_config: config(account),
            webhook_url_override: `${receiver.url}/${id}`,
          });
        }
        const marker = `${provider}-a-${randomUUID()}`;
        const hook = signed(accountA, marker, secret);
        expect((await send(key, hook.body, hook.headers)).status).toBe(200);
        await waitUntil(() => deliveredWith(marker).length > 0);
        // A later webhook for an account no connection has goes out unrouted; once it is out, anything
        // else for the first would be out too.
        const unknownMarker = `${provider}-nobody-${randomUUID()}`;
        const unknown = signed(`acct-${randomUUID()}`, unknownMarker, secret);
        expect((await send(key, unknown.body, unknown.headers)).status).toBe(200);
        await waitUntil(() => deliveredWith(unknownMarker).length > 0);

        const hooks = deliveredWith(marker);
        expect(hooks.map((h) => [h.path, JSON.parse(h.body).connectionId])).toEqual([
          [`/${provider}-a`, `${provider}-a`],
        ]);
        expect(JSON.parse(hooks[0]!.body)).toMatchObject({
          type: 'forward',
          providerConfigKey: key,
          payload: JSON.parse(hook.body),
          verified: true,
        });
        expect(deliveredWith(unknownMarker).map((h) => h.path)).toEqual(['/primary']);
      },
    );

    it('verifies Standard Webhooks (Fathom) with the base64 whsec_ key, routed to the connection by email', async () => {
      const secret = `whsec_${randomBytes(24).toString('base64')}`;
      await createIntegration('fathom', 'fathom-hooks', { type: 'API_KEY', webhook_secret: secret });
      const email = `ana-${randomUUID()}@acme.example`;
      await importConnection('fathom-hooks', {
        connection_id: 'fathom-ana',
        credentials: { type: 'API_KEY', apiKey: 'fathom-key' },
        metadata: { emailAddress: email },
        webhook_url_override: `${receiver.url}/fathom-ana`,
      });
      const meeting = (marker: string) => ({ title: marker, recorded_by: { email } });
      const forgedMarker = `forged-${randomUUID()}`;
      const forgedBody = JSON.stringify(meeting(forgedMarker));
      const marker = `fathom-${randomUUID()}`;
      const body = JSON.stringify(meeting(marker));
      const [hook] = await refusesForgedDeliversSigned(
        'fathom-hooks',
        {
          marker: forgedMarker,
          body: forgedBody,
          headers: standardWebhookHeaders(`whsec_${randomBytes(24).toString('base64')}`, forgedBody),
        },
        { marker, body, headers: standardWebhookHeaders(secret, body) },
      );
      expect(hook!.path).toBe('/fathom-ana');
      expect(JSON.parse(hook!.body)).toEqual({
        from: 'fathom',
        type: 'forward',
        providerConfigKey: 'fathom-hooks',
        connectionId: 'fathom-ana',
        payload: meeting(marker),
        verified: true,
      });
    });

    it("verifies Follow Up Boss's HMAC over the base64 of the body", async () => {
      const systemKey = `fub-${randomUUID()}`;
      await createOAuthIntegration('followupboss', 'fub-hooks', systemKey);
      const event = (marker: string) =>
        JSON.stringify({ eventId: randomUUID(), event: 'peopleCreated', resourceIds: [1], uri: marker });
      const hmacHex = (text: string) => createHmac('sha256', systemKey).update(text).digest('hex');
      const forgedMarker = `forged-${randomUUID()}`;
      const forgedBody = event(forgedMarker);
      const marker = `fub-${randomUUID()}`;
      const body = event(marker);
      const [hook] = await refusesForgedDeliversSigned(
        'fub-hooks',
        // Right key, but over the body itself rather than its base64.
        { marker: forgedMarker, body: forgedBody, headers: { 'fub-signature': hmacHex(forgedBody) } },
        {
          marker,
          body,
          headers: { 'fub-signature': hmacHex(Buffer.from(body).toString('base64')) },
        },
      );
      expect(JSON.parse(hook!.body)).toEqual(JSON.parse(body));
    });

    it("verifies Recharge's SHA-256 digest of the client secret and body, which is no HMAC", async () => {
      const clientSecret = `rc-${randomUUID()}`;
      await createIntegration('recharge', 'recharge-hooks', {
        type: 'API_KEY',
        webhook_secret: clientSecret,
      });
      const event = (marker: string) => JSON.stringify({ charge: { id: 4242, note: marker } });
      const forgedMarker = `forged-${randomUUID()}`;
      const forgedBody = event(forgedMarker);
      const marker = `recharge-${randomUUID()}`;
      const body = event(marker);
      const [hook] = await refusesForgedDeliversSigned(
        'recharge-hooks',
        // The right secret, but as the HMAC key the header's name suggests.
        {
          marker: forgedMarker,
          body: forgedBody,
          headers: {
            'x-recharge-hmac-sha256': createHmac('sha256', clientSecret).update(forgedBody).digest('hex'),
            'x-recharge-topic': 'charge/paid',
          },
        },
        {
          marker,
          body,
          headers: {
            'x-recharge-hmac-sha256': createHash('sha256').update(`${clientSecret}${body}`).digest('hex'),
            'x-recharge-topic': 'charge/paid',
          },
        },
      );
      expect(hook!.path).toBe('/primary');
      expect(JSON.parse(hook!.body)).toEqual(JSON.parse(body));
    });

    it('verifies HighLevel Ed25519 signatures with the public key the integration stores, else HighLevel’s own', async () => {
      const { publicKey, privateKey } = generateKeyPairSync('ed25519');
      const stored = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
      await createOAuthIntegration('highlevel', 'highlevel-hooks', stored);
      const locationId = `loc-${randomUUID()}`;
      // locationId comes from HighLevel's token answer; an import stands in for the OAuth dance.
      await importConnection('highlevel-hooks', {
        connection_id: 'hl-location',
        credentials: { type: 'OAUTH2', access_token: 'hl-token' },
        connection_config: { locationId },
        webhook_url_override: `${receiver.url}/highlevel`,
      });
      const event = (marker: string) => ({
        type: 'ContactCreate',
        locationId,
        webhookId: randomUUID(),
        marker,
      });
      const ed25519 = (body: string, key = privateKey) => ({
        'x-ghl-signature': sign(null, Buffer.from(body), key).toString('base64'),
      });
      const forgedMarker = `forged-${randomUUID()}`;
      const forgedBody = JSON.stringify(event(forgedMarker));
      const marker = `hl-${randomUUID()}`;
      const payload = event(marker);
      const body = JSON.stringify(payload);
      const [hook] = await refusesForgedDeliversSigned(
        'highlevel-hooks',
        {
          marker: forgedMarker,
          body: forgedBody,
          headers: ed25519(forgedBody, generateKeyPairSync('ed25519').privateKey),
        },
        { marker, body, headers: ed25519(body) },
      );
      expect(hook!.path).toBe('/highlevel');
      expect(JSON.parse(hook!.body)).toMatchObject({
        type: 'forward',
        connectionId: 'hl-location',
        payload,
        verified: true,
      });

      // Without a stored key the catalog's pinned HighLevel key checks it: ours is not HighLevel's.
      await createIntegration('highlevel', 'highlevel-pinned', {
        type: 'OAUTH2',
        client_id: 'hl-client',
        client_secret: 'hl-client-secret',
      });
      const pinnedMarker = `pinned-${randomUUID()}`;
      const pinnedBody = JSON.stringify(event(pinnedMarker));
      expect((await send('highlevel-pinned', pinnedBody, ed25519(pinnedBody))).status).toBe(401);
      await new Promise((r) => setTimeout(r, 300));
      expect(deliveredWith(pinnedMarker)).toEqual([]);
    });

    it('verifies Wise RSA-SHA256 webhooks with the public key an integration stores, which no answer shows', async () => {
      const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
      // Far longer than the 255 characters a webhook secret may hold.
      expect(pem.length).toBeGreaterThan(255);
      await createIntegration('wise', 'wise-hooks', { type: 'API_KEY', webhook_public_key: pem });
      // Write-only: the key's body is in no answer, with or without the credentials.
      const keyBody = pem.split('\n')[1]!;
      for (const path of ['/integrations/wise-hooks', '/integrations/wise-hooks?include=credentials']) {
        const read = await api('GET', path);
        expect(read.status).toBe(200);
        expect(JSON.stringify(read.body)).not.toContain(keyBody);
        expect(JSON.stringify(read.body)).not.toContain('webhook_public_key');
      }
      const read = await api('GET', '/integrations/wise-hooks?include=credentials');
      expect((read.body as { data: { credentials: unknown } }).data.credentials).toEqual({
        type: 'API_KEY',
        webhook_secret: null,
      });

      const event = (marker: string) =>
        JSON.stringify({
          event_type: 'transfers#state-change',
          schema_version: '2.0.0',
          data: { resource: { type: 'transfer', id: 111, profile_id: 222 }, current_state: marker },
        });
      const wiseSigned = (body: string, key = privateKey) => ({
        'x-signature-sha256': sign('sha256', Buffer.from(body), key).toString('base64'),
        'x-delivery-id': randomUUID(),
      });
      // Signed, then changed on the way: the signature no longer covers the bytes that arrive.
      const tamperedMarker = `tampered-${randomUUID()}`;
      const tampered = await send(
        'wise-hooks',
        event(tamperedMarker),
        wiseSigned(event(`original-${randomUUID()}`)),
      );
      expect(tampered.status).toBe(401);
      const forgedMarker = `forged-${randomUUID()}`;
      const forgedBody = event(forgedMarker);
      const marker = `wise-${randomUUID()}`;
      const body = event(marker);
      const [hook] = await refusesForgedDeliversSigned(
        'wise-hooks',
        {
          marker: forgedMarker,
          body: forgedBody,
          headers: wiseSigned(forgedBody, generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey),
        },
        { marker, body, headers: wiseSigned(body) },
      );
      expect(deliveredWith(tamperedMarker)).toEqual([]);
      // Nothing names a connection: the raw payload goes to the environment's URL.
      expect(hook!.path).toBe('/primary');
      expect(JSON.parse(hook!.body)).toEqual(JSON.parse(body));
    });

    it('refuses a webhook public key that is unreadable, private, of another algorithm or for an HMAC provider, storing nothing', async () => {
      const rsaPair = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const pem = rsaPair.publicKey.export({ type: 'spki', format: 'pem' }).toString();
      const refusals: [string, string, unknown][] = [
        ['wise', 'wise-bad-pem', '-----BEGIN PUBLIC KEY-----\nnot a key\n-----END PUBLIC KEY-----\n'],
        ['wise', 'wise-private', rsaPair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()],
        [
          'wise',
          'wise-ed25519',
          generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }).toString(),
        ],
        ['wise', 'wise-huge', `${pem}${'A'.repeat(16_384)}`],
        ['dixa', 'dixa-public-key', pem],
      ];
      for (const [provider, key, publicKeyValue] of refusals) {
        const refused = expectError(
          await api('POST', '/integrations', {
            provider,
            unique_key: key,
            credentials: { type: 'API_KEY', webhook_public_key: publicKeyValue },
          }),
          400,
          'invalid_body',
        );
        expect(refused.errors?.[0]?.path).toEqual(['credentials', 'webhook_public_key']);
        expectError(await api('GET', `/integrations/${key}`), 404, 'not_found');
      }
      // An API-key integration of a signed provider still needs one of its two webhook credentials.
      expectError(
        await api('POST', '/integrations', {
          provider: 'wise',
          unique_key: 'wise-empty',
          credentials: { type: 'API_KEY' },
        }),
        400,
        'invalid_body',
      );
      expectError(await api('GET', '/integrations/wise-empty'), 404, 'not_found');

      // A bad key in an update leaves the stored one working.
      const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      await createIntegration('wise', 'wise-kept', {
        type: 'API_KEY',
        webhook_public_key: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
      });
      expectError(
        await api('PATCH', '/integrations/wise-kept', {
          credentials: { type: 'API_KEY', webhook_public_key: 'MIIB-not-base64' },
        }),
        400,
        'invalid_body',
      );
      const marker = `wise-kept-${randomUUID()}`;
      const body = JSON.stringify({ event_type: 'balances#credit', data: { marker } });
      const signature = sign('sha256', Buffer.from(body), privateKey).toString('base64');
      expect((await send('wise-kept', body, { 'x-signature-sha256': signature })).status).toBe(200);
      await waitUntil(() => deliveredWith(marker).length > 0);
    });

    it('verifies Dialpad JWT-signed webhooks (HS256 with the webhook secret) and delivers their claims', async () => {
      const secret = `dialpad-${randomUUID()}`;
      await createOAuthIntegration('dialpad', 'dialpad-hooks', secret);
      const token = (claims: Record<string, unknown>, key: string) =>
        new SignJWT(claims)
          .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
          .setIssuedAt()
          .setExpirationTime('5m')
          .sign(new TextEncoder().encode(key));
      const forgedMarker = `forged-${randomUUID()}`;
      const marker = `dialpad-${randomUUID()}`;
      const claims = { call_id: 4242, state: 'hangup', marker };
      const [hook] = await refusesForgedDeliversSigned(
        'dialpad-hooks',
        {
          marker: forgedMarker,
          body: await token({ call_id: 1, state: 'hangup', marker: forgedMarker }, `not-${secret}`),
          headers: { 'content-type': 'application/jwt' },
        },
        { marker, body: await token(claims, secret), headers: { 'content-type': 'application/jwt' } },
      );
      // The verified claims are the webhook, as JSON: the customer never has to decode the token.
      expect(JSON.parse(hook!.body)).toEqual({ ...claims, iat: expect.any(Number), exp: expect.any(Number) });
    });

    it('stores a GitHub App integration’s webhook secret and verifies its webhooks with it', async () => {
      const secret = `gh-app-${randomUUID()}`;
      const privateKey = generateKeyPairSync('rsa', { modulusLength: 2048 })
        .privateKey.export({ type: 'pkcs8', format: 'pem' })
        .toString();
      await createIntegration('github-app', 'gh-app-hooks', {
        type: 'APP',
        app_id: '4242',
        app_link: 'https://github.com/apps/switchboard-e2e',
        private_key: privateKey,
        webhook_secret: secret,
      });
      const read = await api('GET', '/integrations/gh-app-hooks?include=credentials');
      expect((read.body as { data: { credentials: unknown } }).data.credentials).toMatchObject({
        type: 'APP',
        app_id: '4242',
        webhook_secret: secret,
      });
      const push = (marker: string) =>
        JSON.stringify({ action: 'opened', zen: marker, installation: { id: 9 } });
      const githubSigned = (body: string, key: string) => ({
        'x-github-event': 'issues',
        'x-github-delivery': randomUUID(),
        'x-hub-signature-256': `sha256=${createHmac('sha256', key).update(body).digest('hex')}`,
      });
      const forgedMarker = `forged-${randomUUID()}`;
      const forgedBody = push(forgedMarker);
      const marker = `gh-app-${randomUUID()}`;
      const body = push(marker);
      await refusesForgedDeliversSigned(
        'gh-app-hooks',
        { marker: forgedMarker, body: forgedBody, headers: githubSigned(forgedBody, `not-${secret}`) },
        { marker, body, headers: githubSigned(body, secret) },
      );
    });

    it('refuses a webhook secret for a provider whose webhooks are not signed, storing nothing', async () => {
      const refused = expectError(
        await api('POST', '/integrations', {
          provider: 'teamtailor',
          unique_key: 'teamtailor-hooks',
          credentials: { type: 'API_KEY', webhook_secret: 'whatever' },
        }),
        400,
        'invalid_body',
      );
      expect(refused.errors?.[0]?.path).toEqual(['credentials', 'type']);
      expectError(await api('GET', '/integrations/teamtailor-hooks'), 404, 'not_found');
      // Only the webhook secret: an API-key integration holds no client credentials.
      expectError(
        await api('POST', '/integrations', {
          provider: 'fathom',
          unique_key: 'fathom-client',
          credentials: { type: 'API_KEY', webhook_secret: 'w', client_id: 'c' },
        }),
        400,
        'invalid_body',
      );
    });
  });

  describe('public ingress limits', () => {
    let perEnvironment: ExtraProcess;
    let perAddress: ExtraProcess;
    // Windows live in the Redis every gateway shares: a fresh environment and a fresh loopback source
    // address keep these windows apart from the other tests' (and from earlier runs').
    let flooded: { secretKey: string; environmentUuid: string };
    const octet = () => 2 + Math.floor(Math.random() * 250);
    const sourceAddress = `127.${octet()}.${octet()}.${octet()}`;
    const otherAddress = `127.1.${octet()}.${octet()}`;
    beforeAll(async () => {
      [perEnvironment, perAddress] = await Promise.all([
        startGateway({
          NATS_URL: stack.natsUrl,
          ...stack.natsCredentials('gateway'),
          SWITCHBOARD_WEBHOOK_RATE_LIMIT_PER_ENV_PER_MIN: '3',
          SWITCHBOARD_WEBHOOK_RATE_LIMIT_PER_IP_PER_MIN: '1000',
        }),
        startGateway({
          NATS_URL: stack.natsUrl,
          ...stack.natsCredentials('gateway'),
          SWITCHBOARD_WEBHOOK_RATE_LIMIT_PER_ENV_PER_MIN: '1000',
          SWITCHBOARD_WEBHOOK_RATE_LIMIT_PER_IP_PER_MIN: '2',
        }),
      ]);
      flooded = seedAccount(stack);
      const as = (method: string, path: string, body: unknown) =>
        call(stack.gatewayUrl, method, path, { key: flooded.secretKey, body });
      expect(
        (
          await as('POST', '/integrations', {
            provider: 'linear',
            unique_key: 'linear',
            credentials: {
              type: 'OAUTH2',
              client_id: 'c',
              client_secret: 's',
              webhook_secret: LINEAR_SECRET,
            },
          })
        ).status,
      ).toBe(200);
      expect(
        (await as('PATCH', '/environment', { webhook_settings: { primary_url: `${receiver.url}/flood` } }))
          .status,
      ).toBe(200);
    }, 60_000);
    afterAll(async () => {
      await Promise.all([perEnvironment?.stop(), perAddress?.stop()]);
    });

    /** A signed Linear webhook from `localAddress` (any 127/8 address reaches the gateway on 127.0.0.1). */
    const post = (
      gatewayUrl: string,
      environmentUuid: string,
      body: unknown,
      localAddress?: string,
      extraHeaders: Record<string, string> = {},
    ) => {
      const text = JSON.stringify(body);
      return new Promise<{ status: number; headers: IncomingHttpHeaders; body: string }>(
        (resolve, reject) => {
          const req = httpRequest(
            `${gatewayUrl}/webhook/${environmentUuid}/linear`,
            {
              method: 'POST',
              ...(localAddress ? { localAddress } : {}),
              headers: {
                'content-type': 'application/json',
                'linear-signature': createHmac('sha256', LINEAR_SECRET).update(text).digest('hex'),
                ...extraHeaders,
              },
            },
            (res) => {
              let data = '';
              res.setEncoding('utf8');
              res.on('data', (chunk: string) => (data += chunk));
              res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: data }));
            },
          );
          req.on('error', reject);
          req.end(text);
        },
      );
    };

    it('answers 429 with Retry-After once an environment has had its webhooks of the minute, and stores nothing more', async () => {
      const answers = [];
      for (let i = 0; i < 6; i++) {
        answers.push(
          await post(perEnvironment.url, flooded.environmentUuid, {
            action: 'create',
            organizationId: `org-flood-${i}`,
            webhookTimestamp: Date.now(),
          }),
        );
      }
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 429, 429, 429]);
      const refused = answers.at(-1)!;
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(JSON.parse(refused.body)).toEqual({
        error: { code: 'too_many_request', message: expect.any(String) },
      });
      // Only the three admitted webhooks were stored and forwarded (in any order: deliveries run concurrently).
      await receiver.waitFor(3, '/flood');
      // Every stored webhook routed, and the environment's deliveries are those three, none still to send.
      await consumerDrained(stack.natsUrl, EVENT_CONSUMERS.relayProviderWebhook);
      const planned = await waitFor('the flood to be delivered', async () => {
        const log = (
          await call(stack.gatewayUrl, 'GET', '/environment/webhook-deliveries?type=forward&limit=100', {
            key: flooded.secretKey,
          })
        ).body as { data: { status: string }[] };
        const statuses = log.data.map((d) => d.status);
        return statuses.includes('pending') ? undefined : statuses;
      });
      expect(planned).toEqual(['delivered', 'delivered', 'delivered']);
      expect(
        receiver
          .on('/flood')
          .map((r) => (JSON.parse(r.body) as { organizationId: string }).organizationId)
          .sort(),
      ).toEqual(['org-flood-0', 'org-flood-1', 'org-flood-2']);
    });

    it('counts one sender address across environments, so naming many environments does not escape it', async () => {
      const statuses: number[] = [];
      // A sender naming another client in X-Forwarded-For is not believed (no proxy is trusted by default).
      for (let i = 0; i < 4; i++)
        statuses.push(
          (
            await post(perAddress.url, randomUUID(), {}, sourceAddress, {
              'x-forwarded-for': `198.51.100.${i}`,
            })
          ).status,
        );
      expect(statuses).toEqual([404, 404, 429, 429]);
      // Another address still gets through.
      expect((await post(perAddress.url, randomUUID(), {}, otherAddress)).status).not.toBe(429);
    });
  });

  describe('auth webhooks', () => {
    it('sends a signed auth creation webhook with the tags of the connect session the connection came from', async () => {
      const integration = await api('POST', '/integrations', {
        provider: 'airtable-pat',
        unique_key: 'airtable-pat',
      });
      expect(integration.status).toBe(200);
      const session = await api('POST', '/connect/sessions', {
        end_user: { id: 'user-42', email: 'ada@example.com', display_name: 'Ada' },
        tags: { project: 'apollo' },
      });
      expect(session.status).toBe(201);
      const token = (session.body as { data: { token: string } }).data.token;
      const connected = await call(
        stack.gatewayUrl,
        'POST',
        `/api-auth/api-key/airtable-pat?connect_session_token=${token}`,
        { body: { apiKey: 'pat-123' } },
      );
      expect(connected.status).toBe(200);
      const connectionId = (connected.body as { connectionId: string }).connectionId;

      const [hook] = await waitForHook(receiver, (b) => b.type === 'auth' && b.connectionId === connectionId);
      expectSigned(hook!);
      expect(JSON.parse(hook!.body)).toEqual({
        from: 'nango',
        type: 'auth',
        connectionId,
        providerConfigKey: 'airtable-pat',
        authMode: 'API_KEY',
        provider: 'airtable-pat',
        environment: expect.any(String),
        operation: 'creation',
        success: true,
        tags: expect.objectContaining({
          project: 'apollo',
          end_user_id: 'user-42',
          end_user_email: 'ada@example.com',
        }),
        endUser: expect.objectContaining({ endUserId: 'user-42', endUserEmail: 'ada@example.com' }),
      });
    });
  });

  describe('delivery log', () => {
    it('lists deliveries with status, attempts and response code, shows one with its attempts, and redelivers it with the same id', async () => {
      // Delivered ones: refused provider webhooks are in the log too (status refused, never sent).
      const list = await api('GET', '/environment/webhook-deliveries?type=forward&status=delivered&limit=2');
      expect(list.status).toBe(200);
      const page = list.body as {
        data: {
          id: number;
          webhook_id: string;
          status: string;
          attempts: number;
          last_status_code: number;
          url: string;
        }[];
        next_cursor: number | null;
      };
      expect(page.data).toHaveLength(2);
      expect(page.next_cursor).toEqual(expect.any(Number));
      for (const d of page.data)
        expect(d).toMatchObject({ status: 'delivered', attempts: 1, last_status_code: 200 });
      const next = (
        await api(
          'GET',
          `/environment/webhook-deliveries?type=forward&status=delivered&cursor=${page.next_cursor}`,
        )
      ).body as { data: { id: number }[] };
      expect(next.data.every((d) => d.id < page.data[1]!.id)).toBe(true);

      const first = page.data[0]!;
      const detail = (await api('GET', `/environment/webhook-deliveries/${first.id}`)).body as {
        data: { body: string; attempt_log: { status_code: number }[] };
      };
      expect(detail.data.attempt_log).toEqual([expect.objectContaining({ attempt: 1, status_code: 200 })]);

      const before = receiver.received.filter((r) => r.headers['webhook-id'] === first.webhook_id).length;
      const redelivered = await api('POST', `/environment/webhook-deliveries/${first.id}/redeliver`);
      expect(redelivered.status).toBe(202);
      await waitUntil(
        () =>
          receiver.received.filter((r) => r.headers['webhook-id'] === first.webhook_id).length === before + 1,
      );
      const again = receiver.received.filter((r) => r.headers['webhook-id'] === first.webhook_id).at(-1)!;
      expect(again.body).toBe(detail.data.body);
      expectSigned(again);

      expectError(await api('GET', '/environment/webhook-deliveries/999999999'), 404, 'not_found');
      expectError(
        await api('GET', '/environment/webhook-deliveries?status=bogus'),
        400,
        'invalid_query_params',
      );
      const reader = await createKey(stack.gatewayUrl, stack.secretKey, ['environment:webhooks:read']);
      expect((await api('GET', '/environment/webhook-deliveries', undefined, reader)).status).toBe(200);
      expectError(
        await api('POST', `/environment/webhook-deliveries/${first.id}/redeliver`, undefined, reader),
        403,
        'forbidden',
      );
    });
  });

  describe('delivery rules', () => {
    let publisher: AuthEventPublisher;
    let environmentId: number;
    /** An auth event whose connection overrides the URL: each case gets an endpoint of its own. */
    const sendTo = async (path: string) => {
      const event = publisher.event(environmentId, `conn-${path.slice(1)}`, {
        webhookUrlOverride: `${receiver.url}${path}`,
      });
      await publisher.publish(event);
      return event;
    };
    const deliveriesTo = async (path: string) => {
      const res = await api('GET', `/environment/webhook-deliveries?connection_id=conn-${path.slice(1)}`);
      return (
        res.body as {
          data: {
            id: number;
            status: string;
            attempts: number;
            last_status_code: number | null;
            url: string;
          }[];
        }
      ).data;
    };
    const attemptsOf = async (id: number) =>
      (
        (await api('GET', `/environment/webhook-deliveries/${id}`)).body as {
          data: { attempt_log: { status_code: number | null; started_at: string }[] };
        }
      ).data.attempt_log;
    const settled = async (path: string, status: string) => {
      let found: Awaited<ReturnType<typeof deliveriesTo>> = [];
      await waitUntilAsync(async () => {
        found = await deliveriesTo(path);
        return found.length > 0 && found.every((d) => d.status === status);
      });
      return found;
    };

    beforeAll(async () => {
      publisher = await AuthEventPublisher.connect(stack.natsUrl);
      environmentId = ((await api('GET', '/environment')).body as { data: { id: number } }).data.id;
    });
    afterAll(async () => publisher?.close());

    it('retries 5xx on the schedule until it is accepted', async () => {
      receiver.script.set('/flaky', [{ status: 503 }, { status: 502 }]);
      await sendTo('/flaky');
      const [delivery] = await settled('/flaky', 'delivered');
      expect(delivery).toMatchObject({ attempts: 3, last_status_code: 200 });
      expect((await attemptsOf(delivery!.id)).map((a) => a.status_code)).toEqual([503, 502, 200]);
      const ids = receiver.on('/flaky').map((r) => r.headers['webhook-id']);
      expect(new Set(ids).size).toBe(1);
    });

    it('waits as long as a 429 Retry-After asks', async () => {
      receiver.script.set('/busy', [{ status: 429, headers: { 'retry-after': '2' } }]);
      await sendTo('/busy');
      await settled('/busy', 'delivered');
      const [first, second] = receiver.on('/busy');
      expect(second!.receivedAt - first!.receivedAt).toBeGreaterThanOrEqual(1_900);
    });

    it('does not retry a 4xx refusal, nor a schedule that ran out', async () => {
      receiver.script.set('/reject', [{ status: 400 }]);
      await sendTo('/reject');
      const [refused] = await settled('/reject', 'failed');
      expect(refused).toMatchObject({ attempts: 1, last_status_code: 400 });

      receiver.script.set('/down', [{ status: 500 }, { status: 500 }, { status: 500 }, { status: 500 }]);
      await sendTo('/down');
      const [exhausted] = await settled('/down', 'failed');
      expect(exhausted).toMatchObject({ attempts: 3, last_status_code: 500 });
    });

    it('disables an endpoint that answers 410 Gone until a redelivery brings it back', async () => {
      receiver.script.set('/gone', [{ status: 410 }]);
      await sendTo('/gone');
      const [gone] = await settled('/gone', 'endpoint_disabled');
      const env = (await api('GET', '/environment')).body as {
        data: { disabled_webhook_urls: { url: string }[] };
      };
      expect(env.data.disabled_webhook_urls.map((d) => d.url)).toContain(`${receiver.url}/gone`);

      await sendTo('/gone');
      await settled('/gone', 'endpoint_disabled');
      expect(receiver.on('/gone')).toHaveLength(1);

      expect((await api('POST', `/environment/webhook-deliveries/${gone!.id}/redeliver`)).status).toBe(202);
      await receiver.waitFor(2, '/gone');
      const after = (await api('GET', '/environment')).body as {
        data: { disabled_webhook_urls: { url: string }[] };
      };
      expect(after.data.disabled_webhook_urls.map((d) => d.url)).not.toContain(`${receiver.url}/gone`);
    });
  });

  describe('signing key rotation', () => {
    it('signs with the new key at once and with both keys in webhook-signature during the grace period', async () => {
      const rotated = await api('POST', '/environment/webhook-signing-key/rotate');
      expect(rotated.status).toBe(200);
      const data = (
        rotated.body as {
          data: { webhook_signing_key: string; previous_webhook_signing_key_expires_at: string };
        }
      ).data;
      expect(data.webhook_signing_key).not.toBe(signingKey);
      expect(Date.parse(data.previous_webhook_signing_key_expires_at)).toBeGreaterThan(Date.now());
      const oldKey = signingKey;

      const before = receiver.on('/primary').length;
      expect(
        (
          await linearWebhook({
            action: 'update',
            organizationId: 'org-nobody',
            webhookTimestamp: Date.now(),
          })
        ).status,
      ).toBe(200);
      // The settings cache of the relay lives a second at most.
      const hook = (await receiver.waitFor(before + 1, '/primary')).at(-1)!;
      const headers = headerRecord(hook.headers);
      expect(() => new Webhook(data.webhook_signing_key).verify(hook.body, headers)).not.toThrow();
      expect(() => new Webhook(oldKey).verify(hook.body, headers)).not.toThrow();
      expect(
        new Nango({
          secretKey: stack.secretKey,
          webhookSigningKey: data.webhook_signing_key,
        }).verifyIncomingWebhookRequest(hook.body, headers),
      ).toBe(true);
      signingKey = data.webhook_signing_key;
    });
  });
});

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, sortKeys((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

async function waitUntil(condition: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function waitUntilAsync(condition: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function waitForHook(
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
