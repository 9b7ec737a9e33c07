import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { startStack, type RunningService, type Stack } from '@switchboard/testing';
import { startItemsProvider, type ItemsProvider } from './support/functions-fakes';
import { call } from './support/http';
import { nangoDeploy, prepareProject } from './support/nango-cli';
import {
  ancestry,
  attribute,
  CLIENT,
  otlpEnv,
  SERVER,
  startCollector,
  type CollectedSpan,
} from './support/otlp-collector';
import { START_HOOK_TIMEOUT_MS, STACK_READY_TIMEOUT_MS } from './support/processes';
import { startFakeProvider, writeProxyProvidersFile, type FakeProvider } from './support/proxy-fakes';

jest.setTimeout(180_000);

/** The CLI compiles and typechecks the fixture project before it deploys (slow on a busy 2-core machine). */
const DEPLOY_TIMEOUT_MS = 120_000;

/** A W3C traceparent of a new trace, as a caller that traces its own requests sends it. */
const newTrace = () => {
  const traceId = randomBytes(16).toString('hex');
  return { traceId, traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` };
};

// Both describes share one stack and one loopback OTLP collector: each test follows a trace of its own
// (a traceparent it sent), and the secret checks read every span the stack exported.
let stack: Stack;
let collector: Awaited<ReturnType<typeof startCollector>>;

beforeAll(async () => {
  collector = await startCollector();
  const egress = { SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1' };
  stack = await startStack({
    env: { ...otlpEnv(collector.url), SWITCHBOARD_PROVIDERS_FILE: writeProxyProvidersFile() },
    serviceEnv: { gateway: egress, proxy: egress, 'functions-runtime': egress },
    // Twice the usual wait: seven services boot beside other suites on a 2-core host.
    readyTimeoutMs: 2 * STACK_READY_TIMEOUT_MS,
  });
}, START_HOOK_TIMEOUT_MS + STACK_READY_TIMEOUT_MS);

afterAll(async () => {
  await stack?.stop();
  collector?.server.close();
});

describe('tracing across services', () => {
  let fake: FakeProvider;
  /** One more gateway, in remote mode: it streams /proxy/* to the proxy service. */
  let remoteGateway: RunningService;
  const apiKey = `provider-key-${randomBytes(8).toString('hex')}`;

  beforeAll(async () => {
    fake = await startFakeProvider('a');
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
    // One more replica: on a busy machine that takes longer than a test may.
  }, START_HOOK_TIMEOUT_MS);

  afterAll(async () => {
    await fake?.close();
  });

  /** Proxies GET /echo through `gatewayUrl` in a trace of our own; resolves with the trace's provider call span and its parents. */
  async function tracedProxyCall(
    gatewayUrl: string,
  ): Promise<{ chain: CollectedSpan[]; spans: CollectedSpan[] }> {
    const { traceId, traceparent } = newTrace();
    const res = await fetch(`${gatewayUrl}/proxy/echo?page=2`, {
      headers: {
        Authorization: `Bearer ${stack.secretKey}`,
        'provider-config-key': 'traced',
        'connection-id': 'c1',
        traceparent,
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
    const { traceId, traceparent } = newTrace();
    const res = await fetch(`${stack.gatewayUrl}/integrations`, {
      headers: {
        Authorization: `Bearer ${stack.secretKey}`,
        traceparent,
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
    const { traceId, traceparent } = newTrace();
    const headers = {
      Authorization: `Bearer ${stack.secretKey}`,
      traceparent,
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
    const { traceId, traceparent } = newTrace();
    await fetch(`${stack.gatewayUrl}/providers?search=${sentinel}`, {
      headers: {
        Authorization: `Bearer ${stack.secretKey}`,
        traceparent,
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

const API_KEY = `fakehub-key-${randomBytes(8).toString('hex')}`;
const CONNECTION = 'conn-traced';

/**
 * Trace context through Temporal: a run that goes through a workflow (an async action, a triggered sync
 * run) is one trace from the gateway's HTTP span through the orchestrator's workflow start, the workflow
 * and its activity (the SDK's OpenTelemetry interceptors, Temporal headers), the NATS request to
 * functions-runtime, the run and the script's provider call, exported by each process to a loopback OTLP
 * collector.
 */
describe('tracing through Temporal', () => {
  let provider: ItemsProvider;
  let project: string;

  const api = (method: string, path: string, body?: unknown) =>
    call(stack.gatewayUrl, method, path, { key: stack.secretKey, ...(body !== undefined ? { body } : {}) });

  /**
   * The trace's provider call to `/v2/account` and its ancestry (innermost first), once it reaches up to the
   * gateway's server span: each process exports its own batches (the worker's workflow spans when the
   * workflow task ends).
   */
  const providerCallChain = async (traceId: string) => {
    const ours = () => collector.spans.filter((s) => s.traceId === traceId);
    const providerCall = () =>
      ours().find((s) => s.kind === CLIENT && attribute(s, 'url.full') === `${provider.url}/v2/account`);
    const complete = () => {
      const call = providerCall();
      return call && ancestry(call, ours()).some((s) => s.service === 'gateway' && s.kind === SERVER);
    };
    const deadline = Date.now() + 30_000;
    while (!complete() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    const call = providerCall();
    return { call, chain: call ? ancestry(call, ours()) : [], ours };
  };

  /** `expected` (span names, innermost first) appear in `chain` in this order, and the gateway's is last. */
  const expectChain = (chain: CollectedSpan[], expected: string[]) => {
    const names = chain.map((s) => `${s.service}:${s.name}`);
    const positions = expected.map((name) => names.indexOf(name));
    expect({ names, positions }).toEqual({ names, positions: expect.not.arrayContaining([-1]) });
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
    expect(names[names.length - 1]).toMatch(/^gateway:/);
    expect(chain.some((s) => s.service === 'gateway' && s.kind === SERVER)).toBe(true);
  };

  beforeAll(async () => {
    provider = await startItemsProvider(API_KEY);
    for (const [provider, key] of [
      ['fake-api-key', 'fakehub'],
      ['linear', 'linear'],
    ]) {
      expect((await api('POST', '/integrations', { provider, unique_key: key })).status).toBe(200);
    }
    const connection = await api('POST', '/connections', {
      provider_config_key: 'fakehub',
      connection_id: CONNECTION,
      credentials: { type: 'API_KEY', apiKey: API_KEY },
      connection_config: { origin: provider.url },
    });
    expect([200, 201]).toContain(connection.status);
    project = prepareProject('sync-webhooks-project');
    const deployed = await nangoDeploy(project, stack.gatewayUrl, stack.secretKey);
    expect({ code: deployed.code, stdout: deployed.stdout }).toEqual({
      code: 0,
      stdout: expect.stringContaining('Successfully deployed the functions'),
    });
  }, START_HOOK_TIMEOUT_MS + DEPLOY_TIMEOUT_MS);

  afterAll(async () => {
    await provider?.close();
    if (project) rmSync(project, { recursive: true, force: true });
  });

  it('makes an async action one trace: gateway → workflow start → workflow → activity → run → provider call', async () => {
    const { traceId, traceparent } = newTrace();
    const res = await fetch(`${stack.gatewayUrl}/action/trigger`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${stack.secretKey}`,
        'content-type': 'application/json',
        'connection-id': CONNECTION,
        'provider-config-key': 'fakehub',
        'x-async': 'true',
        traceparent,
      },
      body: JSON.stringify({ action_name: 'read-account', input: {} }),
    });
    expect(res.status).toBe(202);
    const { id } = (await res.json()) as { id: string };

    const { call, chain, ours } = await providerCallChain(traceId);
    expect(call).toBeDefined();
    // Innermost first: the provider call, the run, the orchestrator's activity inside the workflow it
    // was scheduled by, the workflow started by the NATS handler of the gateway's request.
    expectChain(chain, [
      'functions-runtime:function.run action',
      'sync-orchestrator:RunActivity:runInvocationAttempt',
      'sync-orchestrator:StartActivity:runInvocationAttempt',
      'sync-orchestrator:RunWorkflow:invocationWorkflow',
      'sync-orchestrator:StartWorkflow:invocationWorkflow',
    ]);
    // The start and the activity say which run they belong to (the workflow id is the invocation id).
    for (const name of ['StartWorkflow:invocationWorkflow', 'RunActivity:runInvocationAttempt']) {
      expect(attribute(ours().find((s) => s.name === name)!, 'temporalWorkflowId')).toBe(id);
    }
    // The run answered: the action's result is there.
    const deadlineResult = Date.now() + 10_000;
    let result = await api('GET', `/action/${id}`);
    while (result.status === 404 && Date.now() < deadlineResult) {
      await new Promise((r) => setTimeout(r, 200));
      result = await api('GET', `/action/${id}`);
    }
    expect(result.body).toEqual({ login: 'acme' });
    // No credential of the connection reaches a span.
    expect(JSON.stringify(ours())).not.toContain(API_KEY);
  });

  it('makes a triggered sync run one trace: gateway → workflow start → syncWorkflow → activity → run → provider call', async () => {
    const [sync] = (
      (
        await api(
          'GET',
          `/sync/status?provider_config_key=fakehub&connection_id=${CONNECTION}&syncs=accounts`,
        )
      ).body as { syncs: { id: string; status: string }[] }
    ).syncs;
    // `autoStart: false`: the schedule was created paused and nothing ran yet.
    expect(sync).toMatchObject({ status: 'PAUSED' });

    const { traceId, traceparent } = newTrace();
    const res = await fetch(`${stack.gatewayUrl}/sync/trigger`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${stack.secretKey}`,
        'content-type': 'application/json',
        traceparent,
      },
      body: JSON.stringify({
        syncs: ['accounts'],
        provider_config_key: 'fakehub',
        connection_id: CONNECTION,
      }),
    });
    expect({ status: res.status, body: await res.json() }).toEqual({ status: 200, body: { success: true } });

    const { call, chain, ours } = await providerCallChain(traceId);
    expect(call).toBeDefined();
    // Innermost first: the provider call, the sync run on functions-runtime, the run activity inside
    // syncWorkflow, which the orchestrator's NATS handler of the gateway's request started (with the
    // trigger signal).
    expectChain(chain, [
      'functions-runtime:function.run sync',
      'sync-orchestrator:RunActivity:runSyncScript',
      'sync-orchestrator:StartActivity:runSyncScript',
      'sync-orchestrator:RunWorkflow:syncWorkflow',
      'sync-orchestrator:SignalWithStartWorkflow:syncWorkflow',
      'sync-orchestrator:orchestrator.v1.sync.trigger process',
    ]);
    for (const name of ['SignalWithStartWorkflow:syncWorkflow', 'RunActivity:runSyncScript']) {
      expect(attribute(ours().find((s) => s.name === name)!, 'temporalWorkflowId')).toBe(
        `sync-${sync!.id}-trigger`,
      );
    }
    // The run's other steps are in the trace too, under the same workflow span.
    const workflow = chain.find((s) => s.name === 'RunWorkflow:syncWorkflow')!;
    for (const step of ['beginSyncRun', 'finishSyncRun']) {
      expect(ours().find((s) => s.name === `StartActivity:${step}`)?.parentSpanId).toBe(workflow.spanId);
    }

    // The run saved what the script read; a paused sync that is triggered runs once and stays paused.
    const deadline = Date.now() + 30_000;
    let status: Record<string, unknown> | undefined;
    for (;;) {
      [status] = (
        (
          await api(
            'GET',
            `/sync/status?provider_config_key=fakehub&connection_id=${CONNECTION}&syncs=accounts`,
          )
        ).body as { syncs: Record<string, unknown>[] }
      ).syncs;
      if (status?.latestExecutionStatus === 'SUCCESS' || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(status).toMatchObject({
      status: 'PAUSED',
      latestExecutionStatus: 'SUCCESS',
      latestResult: { Account: { added: 1, updated: 0, deleted: 0 } },
      recordCount: { Account: 1 },
    });
    expect(JSON.stringify(ours())).not.toContain(API_KEY);
  });
});
