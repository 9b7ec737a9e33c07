import { randomUUID } from 'node:crypto';
import { ALL_SERVICES, startStack, type Stack, type StackService } from '@switchboard/testing';
import { call } from './support/http';
import { startFakeProvider, writeProxyProvidersFile, type FakeProvider } from './support/proxy-fakes';
import { AuthEventPublisher } from './support/webhook-events';
import { WebhookReceiver } from './support/webhook-receiver';

/**
 * The metrics SREs watch, read the way Prometheus reads them: every service runs with
 * `OTEL_METRICS_EXPORTER=prometheus` on a loopback port of its own (the stack's `metrics` option; the
 * exporter keeps the values in memory and renders them on each scrape), and each test scrapes before and after real traffic through
 * the public API, NATS and JetStream, and asserts the instruments moved.
 */

const RATE_LIMIT = 40;

/** One Prometheus sample: `name{labels} value`. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[key!] = value!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The sum of a metric's samples whose labels include `labels`. */
function total(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

describe('metrics', () => {
  let stack: Stack;
  let fake: FakeProvider;
  let receiver: WebhookReceiver;
  let publisher: AuthEventPublisher;
  const scrape = async (service: StackService): Promise<Sample[]> => {
    const res = await fetch(`http://127.0.0.1:${stack.metricsPorts[service]}/metrics`);
    expect(res.status).toBe(200);
    return parse(await res.text());
  };

  /** Polls `service`'s metrics until `probe` holds (a delivery finishes after its event is acknowledged). */
  const eventually = async (service: StackService, probe: (samples: Sample[]) => boolean) => {
    const deadline = Date.now() + 15_000;
    let samples = await scrape(service);
    while (!probe(samples) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      samples = await scrape(service);
    }
    return samples;
  };

  beforeAll(async () => {
    [fake, receiver] = await Promise.all([startFakeProvider('a'), new WebhookReceiver().start()]);
    stack = await startStack({
      metrics: true,
      env: {
        SWITCHBOARD_PROVIDERS_FILE: writeProxyProvidersFile(),
        SWITCHBOARD_RATE_LIMIT_PER_MIN: String(RATE_LIMIT),
      },
      serviceEnv: {
        gateway: { SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1' },
        'webhook-relay': {
          SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1',
          SWITCHBOARD_WEBHOOK_RETRY_SCHEDULE: '0,200ms,400ms',
          SWITCHBOARD_WEBHOOK_POLL_INTERVAL: '100ms',
        },
      },
    });
    publisher = await AuthEventPublisher.connect(stack.natsUrl);
    const integration = await call(stack.gatewayUrl, 'POST', '/integrations', {
      key: stack.secretKey,
      body: { provider: 'fake-api-key', unique_key: 'metered' },
    });
    expect(integration.status).toBe(200);
    const connection = await call(stack.gatewayUrl, 'POST', '/connections', {
      key: stack.secretKey,
      body: {
        provider_config_key: 'metered',
        connection_id: 'c1',
        credentials: { type: 'API_KEY', apiKey: `key-${randomUUID()}` },
        connection_config: { origin: fake.url },
      },
    });
    expect([200, 201]).toContain(connection.status);
    // An OAuth 2 connection whose token the fake provider refuses until it is refreshed.
    const oauth = await call(stack.gatewayUrl, 'POST', '/integrations', {
      key: stack.secretKey,
      body: {
        provider: 'fake-oauth2',
        unique_key: 'metered-oauth',
        credentials: { type: 'OAUTH2', client_id: 'cid', client_secret: 'csecret' },
      },
    });
    expect(oauth.status).toBe(200);
    const refreshable = await call(stack.gatewayUrl, 'POST', '/connections', {
      key: stack.secretKey,
      body: {
        provider_config_key: 'metered-oauth',
        connection_id: 'c1',
        credentials: { type: 'OAUTH2', access_token: 'at-1', refresh_token: 'rt-0' },
        connection_config: { origin: fake.url },
      },
    });
    expect([200, 201]).toContain(refreshable.status);
  });

  afterAll(async () => {
    await publisher?.close();
    await stack?.stop();
    await fake?.close();
    await receiver?.stop();
  });

  it('counts proxied calls at the front door per route template, and the provider call by provider and status', async () => {
    const before = await scrape('gateway');
    const route = { http_route: '/proxy/*', http_request_method: 'GET', http_response_status_code: '200' };
    const upstream = { switchboard_provider: 'fake-api-key', http_response_status_code: '200' };
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${stack.gatewayUrl}/proxy/echo/${randomUUID()}?page=${i}`, {
        headers: {
          Authorization: `Bearer ${stack.secretKey}`,
          'provider-config-key': 'metered',
          'connection-id': 'c1',
        },
      });
      expect(res.status).toBe(200);
      await res.text();
    }
    const after = await scrape('gateway');
    expect(total(after, 'http_server_request_duration_count', route)).toBe(
      total(before, 'http_server_request_duration_count', route) + 3,
    );
    expect(total(after, 'switchboard_proxy_upstream_duration_count', upstream)).toBe(
      total(before, 'switchboard_proxy_upstream_duration_count', upstream) + 3,
    );
    // Templates, never raw URLs: no series names the random paths.
    expect(after.some((s) => Object.values(s.labels).some((v) => v.includes('/echo/')))).toBe(false);
  });

  it("counts a provider's 401, the vault's refresh by outcome, and the retry's 200", async () => {
    const [gatewayBefore, vaultBefore] = await Promise.all([scrape('gateway'), scrape('connections-vault')]);
    const res = await fetch(`${stack.gatewayUrl}/proxy/needs-fresh-token`, {
      headers: {
        Authorization: `Bearer ${stack.secretKey}`,
        'provider-config-key': 'metered-oauth',
        'connection-id': 'c1',
      },
    });
    expect(res.status).toBe(200);
    await res.text();
    const [gatewayAfter, vaultAfter] = await Promise.all([scrape('gateway'), scrape('connections-vault')]);
    const upstream = (samples: Sample[], status: string) =>
      total(samples, 'switchboard_proxy_upstream_duration_count', {
        switchboard_provider: 'fake-oauth2',
        http_response_status_code: status,
      });
    expect(upstream(gatewayAfter, '401')).toBe(upstream(gatewayBefore, '401') + 1);
    expect(upstream(gatewayAfter, '200')).toBe(upstream(gatewayBefore, '200') + 1);
    const refreshed = { switchboard_provider: 'fake-oauth2', switchboard_refresh_outcome: 'success' };
    expect(total(vaultAfter, 'switchboard_credentials_refresh_total', refreshed)).toBe(
      total(vaultBefore, 'switchboard_credentials_refresh_total', refreshed) + 1,
    );
  });

  it('counts a NATS request on both sides, per subject, and the HTTP route that made it', async () => {
    const subject = { messaging_destination_name: 'auth.v1.integrations.list' };
    const [gatewayBefore, authBefore] = await Promise.all([scrape('gateway'), scrape('auth-connect')]);
    const res = await call(stack.gatewayUrl, 'GET', '/integrations', { key: stack.secretKey });
    expect(res.status).toBe(200);
    const [gatewayAfter, authAfter] = await Promise.all([scrape('gateway'), scrape('auth-connect')]);
    expect(total(gatewayAfter, 'messaging_client_operation_duration_count', subject)).toBe(
      total(gatewayBefore, 'messaging_client_operation_duration_count', subject) + 1,
    );
    expect(total(authAfter, 'messaging_process_duration_count', subject)).toBe(
      total(authBefore, 'messaging_process_duration_count', subject) + 1,
    );
    const route = { http_route: '/integrations', http_response_status_code: '200' };
    expect(total(gatewayAfter, 'http_server_request_duration_count', route)).toBe(
      total(gatewayBefore, 'http_server_request_duration_count', route) + 1,
    );
  });

  it('counts webhook attempts by outcome and the delivery lag of what was delivered', async () => {
    const environmentId = (
      (await call(stack.gatewayUrl, 'GET', '/environment', { key: stack.secretKey })).body as {
        data: { id: number };
      }
    ).data.id;
    const before = await scrape('webhook-relay');
    receiver.script.set('/metered', [{ status: 503 }]);
    await publisher.publish(
      publisher.event(environmentId, 'conn-metered', { webhookUrlOverride: `${receiver.url}/metered` }),
    );
    const attempts = (samples: Sample[], outcome: string) =>
      total(samples, 'switchboard_webhook_delivery_attempts_total', { switchboard_webhook_outcome: outcome });
    const after = await eventually(
      'webhook-relay',
      (s) => attempts(s, 'delivered') > attempts(before, 'delivered'),
    );
    expect(receiver.on('/metered').length).toBe(2);
    expect(attempts(after, 'pending')).toBe(attempts(before, 'pending') + 1);
    expect(attempts(after, 'delivered')).toBe(attempts(before, 'delivered') + 1);
    expect(total(after, 'switchboard_webhook_delivery_lag_count')).toBe(
      total(before, 'switchboard_webhook_delivery_lag_count') + 1,
    );
    // The retry came at least 200 ms after the event: the lag shows it.
    expect(total(after, 'switchboard_webhook_delivery_lag_sum')).toBeGreaterThanOrEqual(
      total(before, 'switchboard_webhook_delivery_lag_sum') + 0.2,
    );
    // The breaker gauge is there for SREs to alert on, even with nothing open.
    expect(after.some((s) => s.name === 'switchboard_webhook_breakers')).toBe(true);
  });

  it('counts rate-limit rejections by window kind, and the 429s per route', async () => {
    const before = await scrape('gateway');
    // A key of the wrong format is refused on the client address's window; past the limit, with a 429.
    let refused = 0;
    for (let i = 0; i < RATE_LIMIT + 5; i++) {
      const res = await fetch(`${stack.gatewayUrl}/connections`, {
        headers: { Authorization: 'Bearer not-a-key' },
      });
      await res.text();
      if (res.status === 429) refused++;
    }
    expect(refused).toBeGreaterThan(0);
    const after = await scrape('gateway');
    const kind = { switchboard_ratelimit_kind: 'ip' };
    expect(total(after, 'switchboard_ratelimit_rejections_total', kind)).toBe(
      total(before, 'switchboard_ratelimit_rejections_total', kind) + refused,
    );
    const tooMany = { http_route: '/connections', http_response_status_code: '429' };
    expect(total(after, 'http_server_request_duration_count', tooMany)).toBe(
      total(before, 'http_server_request_duration_count', tooMany) + refused,
    );
  });

  it('serves every service’s metrics, named after the service, and the Temporal worker’s', async () => {
    const processes = [
      ...ALL_SERVICES.map((s) => [s, s] as const),
      ['sync-orchestrator-worker', 'sync-orchestrator'] as const,
    ];
    for (const [process, service] of processes) {
      const res = await fetch(`http://127.0.0.1:${stack.metricsPorts[process]}/metrics`);
      const text = await res.text();
      expect(text).toContain(`service_name="${service}"`);
    }
  });
});
