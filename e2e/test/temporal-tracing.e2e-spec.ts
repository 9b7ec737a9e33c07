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
 * Trace context through Temporal: a run that goes through a workflow (an async action, a triggered sync
 * run) is one trace from the gateway's HTTP span through the orchestrator's workflow start, the workflow
 * and its activity (the SDK's OpenTelemetry interceptors, Temporal headers), the NATS request to
 * functions-runtime, the run and the script's provider call, exported by each process to a loopback OTLP
 * collector.
 */
describe('tracing through Temporal', () => {
  let stack: Stack;
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let provider: ItemsProvider;
  let project: string;

  const api = (method: string, path: string, body?: unknown) =>
    call(stack.gatewayUrl, method, path, { key: stack.secretKey, ...(body !== undefined ? { body } : {}) });

  /** A W3C traceparent of a new trace, as a caller that traces its own requests sends it. */
  const newTrace = () => {
    const traceId = randomBytes(16).toString('hex');
    return { traceId, traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` };
  };

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
