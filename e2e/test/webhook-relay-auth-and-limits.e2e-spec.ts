import { createHmac, randomUUID } from 'node:crypto';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { EVENT_CONSUMERS } from '@switchboard/contracts';
import { consumerDrained } from './support/barriers';
import { call } from './support/http';
import { seedAccount, startGateway, waitFor, type ExtraProcess } from './support/processes';
import { standardStack } from './support/standard-stack';
import { AuthEventPublisher } from './support/webhook-events';
import { LINEAR_SECRET, waitForHook, waitUntilAsync, webhookRelaySuite } from './support/webhook-relay-suite';

/**
 * The webhook relay beyond provider forwards: the public ingress's rate limits (per environment and per
 * sender address, on gateways of this file's own), a signed `auth` webhook for a connection made through
 * a connect session, and the delivery rules (retries, Retry-After, refusals, endpoints disabled by 410).
 */

describe('webhook relay', () => {
  const relay = webhookRelaySuite(() => standardStack());
  const { api, expectSigned } = relay;

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
          NATS_URL: relay.stack.natsUrl,
          ...relay.stack.natsCredentials('gateway'),
          SWITCHBOARD_WEBHOOK_RATE_LIMIT_PER_ENV_PER_MIN: '3',
          SWITCHBOARD_WEBHOOK_RATE_LIMIT_PER_IP_PER_MIN: '1000',
        }),
        startGateway({
          NATS_URL: relay.stack.natsUrl,
          ...relay.stack.natsCredentials('gateway'),
          SWITCHBOARD_WEBHOOK_RATE_LIMIT_PER_ENV_PER_MIN: '1000',
          SWITCHBOARD_WEBHOOK_RATE_LIMIT_PER_IP_PER_MIN: '2',
        }),
      ]);
      flooded = seedAccount(relay.stack);
      const as = (method: string, path: string, body: unknown) =>
        call(relay.stack.gatewayUrl, method, path, { key: flooded.secretKey, body });
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
        (
          await as('PATCH', '/environment', {
            webhook_settings: { primary_url: `${relay.receiver.url}/flood` },
          })
        ).status,
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
      await relay.receiver.waitFor(3, '/flood');
      // Every stored webhook routed, and the environment's deliveries are those three, none still to send.
      await consumerDrained(relay.stack.natsUrl, EVENT_CONSUMERS.relayProviderWebhook);
      const planned = await waitFor('the flood to be delivered', async () => {
        const log = (
          await call(
            relay.stack.gatewayUrl,
            'GET',
            '/environment/webhook-deliveries?type=forward&limit=100',
            {
              key: flooded.secretKey,
            },
          )
        ).body as { data: { status: string }[] };
        const statuses = log.data.map((d) => d.status);
        return statuses.includes('pending') ? undefined : statuses;
      });
      expect(planned).toEqual(['delivered', 'delivered', 'delivered']);
      expect(
        relay.receiver
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
    // As the settings tests leave them (the settings tests are in webhook-relay-forwarding).
    beforeAll(() => relay.receiveOnPrimary());

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
        relay.stack.gatewayUrl,
        'POST',
        `/api-auth/api-key/airtable-pat?connect_session_token=${token}`,
        { body: { apiKey: 'pat-123' } },
      );
      expect(connected.status).toBe(200);
      const connectionId = (connected.body as { connectionId: string }).connectionId;

      const [hook] = await waitForHook(
        relay.receiver,
        (b) => b.type === 'auth' && b.connectionId === connectionId,
      );
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

  describe('delivery rules', () => {
    let publisher: AuthEventPublisher;
    let environmentId: number;
    /** An auth event whose connection overrides the URL: each case gets an endpoint of its own. */
    const sendTo = async (path: string) => {
      const event = publisher.event(environmentId, `conn-${path.slice(1)}`, {
        webhookUrlOverride: `${relay.receiver.url}${path}`,
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
      publisher = await AuthEventPublisher.connect(relay.stack.natsUrl);
      environmentId = ((await api('GET', '/environment')).body as { data: { id: number } }).data.id;
    });
    afterAll(async () => publisher?.close());

    it('retries 5xx on the schedule until it is accepted', async () => {
      relay.receiver.script.set('/flaky', [{ status: 503 }, { status: 502 }]);
      await sendTo('/flaky');
      const [delivery] = await settled('/flaky', 'delivered');
      expect(delivery).toMatchObject({ attempts: 3, last_status_code: 200 });
      expect((await attemptsOf(delivery!.id)).map((a) => a.status_code)).toEqual([503, 502, 200]);
      const ids = relay.receiver.on('/flaky').map((r) => r.headers['webhook-id']);
      expect(new Set(ids).size).toBe(1);
    });

    it('waits as long as a 429 Retry-After asks', async () => {
      relay.receiver.script.set('/busy', [{ status: 429, headers: { 'retry-after': '2' } }]);
      await sendTo('/busy');
      await settled('/busy', 'delivered');
      const [first, second] = relay.receiver.on('/busy');
      expect(second!.receivedAt - first!.receivedAt).toBeGreaterThanOrEqual(1_900);
    });

    it('does not retry a 4xx refusal, nor a schedule that ran out', async () => {
      relay.receiver.script.set('/reject', [{ status: 400 }]);
      await sendTo('/reject');
      const [refused] = await settled('/reject', 'failed');
      expect(refused).toMatchObject({ attempts: 1, last_status_code: 400 });

      relay.receiver.script.set('/down', [
        { status: 500 },
        { status: 500 },
        { status: 500 },
        { status: 500 },
      ]);
      await sendTo('/down');
      const [exhausted] = await settled('/down', 'failed');
      expect(exhausted).toMatchObject({ attempts: 3, last_status_code: 500 });
    });

    it('disables an endpoint that answers 410 Gone until a redelivery brings it back', async () => {
      relay.receiver.script.set('/gone', [{ status: 410 }]);
      await sendTo('/gone');
      const [gone] = await settled('/gone', 'endpoint_disabled');
      const env = (await api('GET', '/environment')).body as {
        data: { disabled_webhook_urls: { url: string }[] };
      };
      expect(env.data.disabled_webhook_urls.map((d) => d.url)).toContain(`${relay.receiver.url}/gone`);

      await sendTo('/gone');
      await settled('/gone', 'endpoint_disabled');
      expect(relay.receiver.on('/gone')).toHaveLength(1);

      expect((await api('POST', `/environment/webhook-deliveries/${gone!.id}/redeliver`)).status).toBe(202);
      await relay.receiver.waitFor(2, '/gone');
      const after = (await api('GET', '/environment')).body as {
        data: { disabled_webhook_urls: { url: string }[] };
      };
      expect(after.data.disabled_webhook_urls.map((d) => d.url)).not.toContain(`${relay.receiver.url}/gone`);
    });
  });
});
