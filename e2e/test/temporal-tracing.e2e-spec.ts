import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { startStack, type Stack } from '@switchboard/testing';
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
import { writeProxyProvidersFile } from './support/proxy-fakes';

jest.setTimeout(180_000);

/** The CLI compiles and typechecks the fixture project before it deploys (slow on a busy 2-core machine). */
const DEPLOY_TIMEOUT_MS = 120_000;

const API_KEY = `fakehub-key-${randomBytes(8).toString('hex')}`;
const CONNECTION = 'conn-traced';

/**
 * Trace context through Temporal: a run that goes through a workflow (an async action) is one trace from
 * the gateway's HTTP span through the orchestrator's workflow start, the workflow and its activity (the
 * SDK's OpenTelemetry interceptors, Temporal headers), the NATS request to functions-runtime, the run
 * and the script's provider call, exported by each process to a loopback OTLP collector.
 */
describe('tracing through Temporal', () => {
  let stack: Stack;
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let provider: ItemsProvider;
  let project: string;

  const api = (method: string, path: string, body?: unknown) =>
    call(stack.gatewayUrl, method, path, { key: stack.secretKey, ...(body !== undefined ? { body } : {}) });

  beforeAll(
    async () => {
      [collector, provider] = await Promise.all([startCollector(), startItemsProvider(API_KEY)]);
      stack = await startStack({
        env: { ...otlpEnv(collector.url), SWITCHBOARD_PROVIDERS_FILE: writeProxyProvidersFile() },
        serviceEnv: {
          gateway: { SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1' },
          proxy: { SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1' },
          'functions-runtime': { SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1' },
        },
        // Twice the usual wait: these stacks also bundle the workflows and run the CLI on a shared 2-core host.
        readyTimeoutMs: 2 * STACK_READY_TIMEOUT_MS,
      });
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
    },
    START_HOOK_TIMEOUT_MS + STACK_READY_TIMEOUT_MS + DEPLOY_TIMEOUT_MS,
  );

  afterAll(async () => {
    await stack?.stop();
    collector?.server.close();
    await provider?.close();
    if (project) rmSync(project, { recursive: true, force: true });
  });

  it('makes an async action one trace: gateway → workflow start → workflow → activity → run → provider call', async () => {
    const traceId = randomBytes(16).toString('hex');
    const res = await fetch(`${stack.gatewayUrl}/action/trigger`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${stack.secretKey}`,
        'content-type': 'application/json',
        'connection-id': CONNECTION,
        'provider-config-key': 'fakehub',
        'x-async': 'true',
        traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`,
      },
      body: JSON.stringify({ action_name: 'read-account', input: {} }),
    });
    expect(res.status).toBe(202);
    const { id } = (await res.json()) as { id: string };

    const ours = () => collector.spans.filter((s) => s.traceId === traceId);
    const providerCall = () =>
      ours().find((s) => s.kind === CLIENT && attribute(s, 'url.full') === `${provider.url}/v2/account`);
    // Each process exports its own batches (the worker's workflow spans when the workflow task ends):
    // wait until the provider call reaches up to the gateway's server span.
    const complete = () => {
      const call = providerCall();
      return call && ancestry(call, ours()).some((s) => s.service === 'gateway' && s.kind === SERVER);
    };
    const deadline = Date.now() + 30_000;
    while (!complete() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    const call = providerCall();
    expect(call).toBeDefined();

    const chain = ancestry(call!, ours()).map((s: CollectedSpan) => `${s.service}:${s.name}`);
    // Innermost first: the provider call, the run, the orchestrator's activity inside the workflow it
    // was scheduled by, the workflow started by the NATS handler of the gateway's request.
    const expected = [
      'functions-runtime:function.run action',
      'sync-orchestrator:RunActivity:runInvocationAttempt',
      'sync-orchestrator:StartActivity:runInvocationAttempt',
      'sync-orchestrator:RunWorkflow:invocationWorkflow',
      'sync-orchestrator:StartWorkflow:invocationWorkflow',
    ];
    const positions = expected.map((name) => chain.indexOf(name));
    expect({ chain, positions }).toEqual({ chain, positions: expect.not.arrayContaining([-1]) });
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
    expect(chain[chain.length - 1]).toMatch(/^gateway:/);
    expect(ancestry(call!, ours()).some((s) => s.service === 'gateway' && s.kind === SERVER)).toBe(true);
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
});
