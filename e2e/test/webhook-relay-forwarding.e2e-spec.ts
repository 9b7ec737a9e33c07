import { execFile } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Nango } from '@nangohq/node';
import { EVENT_CONSUMERS } from '@switchboard/contracts';
import { repoRoot } from '@switchboard/testing';
import { Webhook } from 'standardwebhooks';
import { consumerDrained } from './support/barriers';
import { createKey, expectError } from './support/http';
import { waitFor } from './support/processes';
import { standardStack } from './support/standard-stack';
import { linearIntegration } from './support/webhook-events';
import { headerRecord } from './support/webhook-receiver';
import { LINEAR_SECRET, waitUntil, webhookRelaySuite } from './support/webhook-relay-suite';

/**
 * The webhook relay through the public API: environment webhook settings and signing key (API and CLI),
 * a provider webhook in (signature checked on the raw bytes) and a signed `forward` out to a receiver on
 * loopback, the delivery log of those forwards, and the rotation of the signing key.
 * The catalog's signature schemes are in webhook-relay-signatures.e2e-spec.ts; auth webhooks, delivery
 * rules and the ingress limits in webhook-relay-auth-and-limits.e2e-spec.ts.
 */

const SLACK_SECRET = `slack-${randomUUID()}`;

describe('webhook relay', () => {
  const relay = webhookRelaySuite(() => standardStack());
  const { api, expectSigned, linearWebhook } = relay;

  describe('settings', () => {
    it('shows the environment, default toggles and a Standard Webhooks signing key separate from the secret key', async () => {
      const res = await api('GET', '/environment');
      expect(res.status).toBe(200);
      const data = (res.body as { data: Record<string, unknown> }).data;
      expect(data).toMatchObject({
        uuid: relay.stack.environmentUuid,
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
      relay.signingKey = data.webhook_signing_key as string;
      expect(relay.signingKey).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(relay.signingKey).not.toContain(relay.stack.secretKey);
      // Stable: a second read shows the same key.
      expect(
        ((await api('GET', '/environment')).body as { data: { webhook_signing_key: string } }).data
          .webhook_signing_key,
      ).toBe(relay.signingKey);
    });

    it('needs environment:settings:read to read and environment:settings:write to change', async () => {
      const reader = await createKey(relay.stack.gatewayUrl, relay.stack.secretKey, [
        'environment:settings:read',
      ]);
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
      const writer = await createKey(relay.stack.gatewayUrl, relay.stack.secretKey, [
        'environment:settings:write',
      ]);
      expectError(await api('GET', '/environment', undefined, writer), 403, 'forbidden');
    });

    it('changes only the fields passed and refuses URLs the egress policy blocks, storing nothing', async () => {
      const res = await api('PATCH', '/environment', {
        webhook_settings: {
          primary_url: `${relay.receiver.url}/primary`,
          secondary_url: `${relay.receiver.url}/secondary`,
          on_sync_completion_always: true,
        },
      });
      expect(res.status).toBe(200);
      expect((res.body as { data: { webhook_settings: unknown } }).data.webhook_settings).toMatchObject({
        primary_url: `${relay.receiver.url}/primary`,
        secondary_url: `${relay.receiver.url}/secondary`,
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
      expect(after.data.webhook_settings.secondary_url).toBe(`${relay.receiver.url}/secondary`);

      await api('PATCH', '/environment', { webhook_settings: { secondary_url: null } });
    });
  });

  describe('the CLI', () => {
    it('shows and changes the webhook settings', async () => {
      const cli = (...args: string[]) =>
        promisify(execFile)(process.execPath, [
          join(repoRoot(), 'packages/cli/dist/main.js'),
          '--host',
          relay.stack.gatewayUrl,
          '--key',
          relay.stack.secretKey,
          ...args,
        ]);
      const set = await cli('webhooks', 'set', '--on-sync-error', 'false');
      expect(set.stdout).toContain('on_sync_error: false');
      const shown = await cli('webhooks', 'show');
      expect(shown.stdout).toContain(`primary_url: ${relay.receiver.url}/primary`);
      expect(shown.stdout).toContain(`webhook_signing_key: ${relay.signingKey}`);
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
        ['conn-org-1-override', `${relay.receiver.url}/override`],
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
        relay.receiver.received.filter((r) => (JSON.parse(r.body) as { type?: string }).type === 'forward');
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
      const before = relay.receiver.on('/primary').length;
      const event = {
        action: 'remove',
        type: 'Comment',
        organizationId: 'org-nobody',
        webhookTimestamp: Date.now(),
      };
      expect((await linearWebhook(event)).status).toBe(200);
      const [hook] = (await relay.receiver.waitFor(before + 1, '/primary')).slice(before);
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
    const newestForward = async (key = relay.stack.secretKey) => {
      const log = (await api('GET', '/environment/webhook-deliveries?type=forward&limit=100', undefined, key))
        .body as { data: { id: number; status: string }[] };
      return Math.max(0, ...log.data.filter((d) => d.status !== 'refused').map((d) => d.id));
    };

    it('refuses a bad signature with 401, forwards nothing, and shows it in the delivery log as refused', async () => {
      // Webhooks of the tests before still being routed would plan forwards after this point: let them.
      await consumerDrained(relay.stack.natsUrl, EVENT_CONSUMERS.relayProviderWebhook);
      const before = relay.receiver.received.length;
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
      const unsigned = await fetch(
        `${relay.stack.gatewayUrl}/webhook/${relay.stack.environmentUuid}/linear`,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(forged),
        },
      );
      expect(unsigned.status).toBe(401);
      // Every stored webhook routed, and no forward planned since: nothing is on its way to the relay.receiver.
      await consumerDrained(relay.stack.natsUrl, EVENT_CONSUMERS.relayProviderWebhook);
      expect(await newestForward()).toBe(forwardBefore);
      expect(relay.receiver.received.length).toBe(before);

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
      expect(relay.receiver.received.length).toBe(before);
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
        relay.receiver
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
      const res = await fetch(
        `${relay.stack.gatewayUrl}/webhook/${relay.stack.environmentUuid}/linear-unsigned`,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-switchboard-webhook-verified': 'true' },
          body: JSON.stringify(event),
        },
      );
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
      const url = `${relay.stack.gatewayUrl}/webhook/${relay.stack.environmentUuid}/slack`;
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
        fetch(`${relay.stack.gatewayUrl}${path}`, {
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
      expect(await codeOf(await post(`/webhook/${relay.stack.environmentUuid}/nope`))).toEqual({
        status: 404,
        code: 'unknown_provider_config',
      });
      expect(await codeOf(await post('/webhook/not-a-uuid/linear'))).toEqual({
        status: 400,
        code: 'invalid_uri_params',
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

      const before = relay.receiver.received.filter(
        (r) => r.headers['webhook-id'] === first.webhook_id,
      ).length;
      const redelivered = await api('POST', `/environment/webhook-deliveries/${first.id}/redeliver`);
      expect(redelivered.status).toBe(202);
      await waitUntil(
        () =>
          relay.receiver.received.filter((r) => r.headers['webhook-id'] === first.webhook_id).length ===
          before + 1,
      );
      const again = relay.receiver.received
        .filter((r) => r.headers['webhook-id'] === first.webhook_id)
        .at(-1)!;
      expect(again.body).toBe(detail.data.body);
      expectSigned(again);

      expectError(await api('GET', '/environment/webhook-deliveries/999999999'), 404, 'not_found');
      expectError(
        await api('GET', '/environment/webhook-deliveries?status=bogus'),
        400,
        'invalid_query_params',
      );
      const reader = await createKey(relay.stack.gatewayUrl, relay.stack.secretKey, [
        'environment:webhooks:read',
      ]);
      expect((await api('GET', '/environment/webhook-deliveries', undefined, reader)).status).toBe(200);
      expectError(
        await api('POST', `/environment/webhook-deliveries/${first.id}/redeliver`, undefined, reader),
        403,
        'forbidden',
      );
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
      expect(data.webhook_signing_key).not.toBe(relay.signingKey);
      expect(Date.parse(data.previous_webhook_signing_key_expires_at)).toBeGreaterThan(Date.now());
      const oldKey = relay.signingKey;

      const before = relay.receiver.on('/primary').length;
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
      const hook = (await relay.receiver.waitFor(before + 1, '/primary')).at(-1)!;
      const headers = headerRecord(hook.headers);
      expect(() => new Webhook(data.webhook_signing_key).verify(hook.body, headers)).not.toThrow();
      expect(() => new Webhook(oldKey).verify(hook.body, headers)).not.toThrow();
      expect(
        new Nango({
          secretKey: relay.stack.secretKey,
          webhookSigningKey: data.webhook_signing_key,
        }).verifyIncomingWebhookRequest(hook.body, headers),
      ).toBe(true);
      relay.signingKey = data.webhook_signing_key;
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
