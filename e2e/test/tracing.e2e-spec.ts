import { randomBytes } from 'node:crypto';
import { startStack, type RunningService, type Stack } from '@switchboard/testing';
import { call } from './support/http';
import {
  ancestry,
  attribute,
  CLIENT,
  otlpEnv,
  SERVER,
  startCollector,
  type CollectedSpan,
} from './support/otlp-collector';
import { START_HOOK_TIMEOUT_MS } from './support/processes';
import { startFakeProvider, writeProxyProvidersFile, type FakeProvider } from './support/proxy-fakes';

describe('tracing across services', () => {
  let stack: Stack;
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let fake: FakeProvider;
  /** One more gateway, in remote mode: it streams /proxy/* to the proxy service. */
  let remoteGateway: RunningService;
  const apiKey = `provider-key-${randomBytes(8).toString('hex')}`;

  beforeAll(async () => {
    [collector, fake] = await Promise.all([startCollector(), startFakeProvider('a')]);
    const engineEnv = { SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1' };
    stack = await startStack({
      env: {
        ...otlpEnv(collector.url),
        SWITCHBOARD_PROVIDERS_FILE: writeProxyProvidersFile(),
      },
      serviceEnv: { gateway: engineEnv, proxy: engineEnv },
    });
    remoteGateway = await stack.startReplica('gateway', { SWITCHBOARD_PROXY_MODE: 'remote' });
    // The provider puts the connection's API key into the query: it must never reach a span.
    const integration = await call(stack.gatewayUrl, 'POST', '/integrations', {
      key: stack.secretKey,
      body: { provider: 'fake-api-key-query', unique_key: 'traced' },
    });
    expect(integration.status).toBe(200);
    const connection = await call(stack.gatewayUrl, 'POST', '/connections', {
      key: stack.secretKey,
      body: {
        provider_config_key: 'traced',
        connection_id: 'c1',
        credentials: { type: 'API_KEY', apiKey },
        connection_config: { origin: fake.url },
      },
    });
    expect([200, 201]).toContain(connection.status);
    // A stack and one more replica: on a busy machine that takes longer than a test may.
  }, START_HOOK_TIMEOUT_MS);

  afterAll(async () => {
    await stack?.stop();
    collector?.server.close();
    await fake?.close();
  });

  /** Proxies GET /echo through `gatewayUrl` in a trace of our own; resolves with the trace's provider call span and its parents. */
  async function tracedProxyCall(
    gatewayUrl: string,
  ): Promise<{ chain: CollectedSpan[]; spans: CollectedSpan[] }> {
    const traceId = randomBytes(16).toString('hex');
    const res = await fetch(`${gatewayUrl}/proxy/echo?page=2`, {
      headers: {
        Authorization: `Bearer ${stack.secretKey}`,
        'provider-config-key': 'traced',
        'connection-id': 'c1',
        traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`,
      },
    });
    expect(res.status).toBe(200);
    await res.text();

    const ours = () => collector.spans.filter((s) => s.traceId === traceId);
    const providerCall = () =>
      ours().find((s) => s.kind === CLIENT && attribute(s, 'url.full') === `${fake.url}/echo`);
    // Spans arrive in batches per process; wait until the provider call reaches up to the gateway's server span.
    const complete = () => {
      const call = providerCall();
      return call && ancestry(call, ours()).some((s) => s.service === 'gateway' && s.kind === SERVER);
    };
    const deadline = Date.now() + 15_000;
    while (!complete() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(providerCall()).toBeDefined();
    return { chain: ancestry(providerCall()!, ours()), spans: ours() };
  }

  it("makes a proxied call one trace: the gateway's server span holds the provider call (embedded, the default)", async () => {
    const { chain, spans } = await tracedProxyCall(stack.gatewayUrl);
    expect(chain[0]).toMatchObject({ service: 'gateway', kind: CLIENT });
    expect(chain.some((s) => s.service === 'gateway' && s.kind === SERVER)).toBe(true);
    // The key is cached by now (beforeAll used it), so the front door served the call without Fastify.
    const server = chain.find((s) => s.service === 'gateway' && s.kind === SERVER)!;
    expect(server.name).toBe('GET /proxy/*');
    expect(attribute(server, 'switchboard.proxy.lane')).toBe('direct');
    expect(attribute(server, 'http.target')).toBe('/proxy/echo');
    expect(attribute(server, 'url.query')).toBe('page=REDACTED');
    // One hop fewer: the proxy service takes no part.
    expect(spans.some((s) => s.service === 'proxy')).toBe(false);
  });

  it('in remote mode the same trace runs gateway → proxy service → provider', async () => {
    const { chain } = await tracedProxyCall(`http://127.0.0.1:${remoteGateway.port}`);
    expect(
      chain.map(
        (s) => `${s.service}:${s.kind === SERVER ? 'server' : s.kind === CLIENT ? 'client' : s.kind}`,
      ),
    ).toEqual(expect.arrayContaining(['proxy:client', 'proxy:server', 'gateway:client', 'gateway:server']));
    expect(chain[0]).toMatchObject({ service: 'proxy', kind: CLIENT });
    // Remote mode: the front door hands every call to Fastify, which relays it.
    const server = chain.find((s) => s.service === 'gateway' && s.kind === SERVER)!;
    expect(attribute(server, 'switchboard.proxy.lane')).toBe('framework');
  });

  /** Lists the integrations through the gateway under a new trace, and waits for the spans of the listing. */
  const tracedListing = async () => {
    const traceId = randomBytes(16).toString('hex');
    const res = await fetch(`${stack.gatewayUrl}/integrations`, {
      headers: {
        Authorization: `Bearer ${stack.secretKey}`,
        traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`,
      },
    });
    expect(res.status).toBe(200);
    const deadline = Date.now() + 15_000;
    const ours = () => collector.spans.filter((s) => s.traceId === traceId);
    const handled = () =>
      ours().find((s) => s.service === 'auth-connect' && s.name === 'auth.v1.integrations.list process');
    // Each process exports its own batches: wait for the gateway's too (its HTTP span ends last).
    const gatewayServer = () => ours().some((s) => s.service === 'gateway' && s.kind === SERVER);
    while (!(handled() && gatewayServer()) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    return { traceId, res, spans: ours(), handled: handled() };
  };

  it('makes one public request one trace, from the gateway into the owning service', async () => {
    const { traceId, res, spans, handled } = await tracedListing();
    // The answer names its trace (what the console links to a trace UI).
    expect(res.headers.get('traceresponse')).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));

    const services = new Set(spans.map((s) => s.service));
    expect(services).toEqual(new Set(['gateway', 'auth-connect']));

    // The span in auth-connect is the child of the gateway's NATS request span, itself inside the HTTP span.
    const server = handled!;
    const client = spans.find((s) => s.spanId === server.parentSpanId);
    expect(client).toMatchObject({ service: 'gateway', name: 'auth.v1.integrations.list send' });
    expect(spans.some((s) => s.service === 'gateway' && s.spanId === client!.parentSpanId)).toBe(true);
    // The database work of the handler is inside the same trace.
    expect(spans.some((s) => s.service === 'auth-connect' && s.name.startsWith('pg.'))).toBe(true);
  });

  it('OTEL_SDK_DISABLED=true turns tracing off in a service: it still serves, and nothing of its requests is exported', async () => {
    const untraced = await stack.startReplica('gateway', { OTEL_SDK_DISABLED: 'true' });
    const traceId = randomBytes(16).toString('hex');
    const headers = {
      Authorization: `Bearer ${stack.secretKey}`,
      traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`,
    };
    const listed = await fetch(`http://127.0.0.1:${untraced.port}/integrations`, { headers });
    expect(listed.status).toBe(200);
    const proxied = await fetch(`http://127.0.0.1:${untraced.port}/proxy/echo`, {
      headers: { ...headers, 'provider-config-key': 'traced', 'connection-id': 'c1' },
    });
    expect(proxied.status).toBe(200);
    await proxied.text();
    // A traced listing after them: once its spans from the gateway and auth-connect are in, whatever those
    // services recorded for the requests before it has been exported too (each exports in order).
    await tracedListing();
    // Not even auth-connect's span for the listing: without the SDK no trace context travels on NATS either.
    expect(collector.spans.filter((s) => s.traceId === traceId)).toEqual([]);
  });

  it('never records the secret key or a query string in a span', async () => {
    // Connect flows carry session tokens in the query; a sentinel stands in for one.
    const sentinel = `sentinel${randomBytes(8).toString('hex')}`;
    const traceId = randomBytes(16).toString('hex');
    await fetch(`${stack.gatewayUrl}/providers?search=${sentinel}`, {
      headers: {
        Authorization: `Bearer ${stack.secretKey}`,
        traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`,
      },
    });
    // Not a fixed wait: the span of this very request, the one the sentinel would be in, has been exported.
    const served = () =>
      collector.spans.some((s) => s.traceId === traceId && s.service === 'gateway' && s.kind === SERVER);
    const deadline = Date.now() + 15_000;
    while (!served() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(served()).toBe(true);
    expect(collector.spans.some((s) => s.service === 'gateway' && s.name === 'GET')).toBe(true);
    const recorded = JSON.stringify(collector.spans);
    expect(recorded).not.toContain(stack.secretKey);
    expect(recorded).not.toContain(sentinel);
    // The provider credential the proxy put into the provider URL's query (calls above).
    expect(recorded).not.toContain(apiKey);
  });
});
