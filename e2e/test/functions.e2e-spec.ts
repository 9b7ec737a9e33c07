import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Nango } from '@nangohq/node';
import { Client, Connection, ScheduleNotFoundError } from '@temporalio/client';
import { repoRoot, startStack, type Stack } from '@switchboard/testing';
import { Webhook } from 'standardwebhooks';
import { authWebhooksSettled } from './support/barriers';
import { startItemsProvider, ITEM_NAMES, type ItemsProvider } from './support/functions-fakes';
import { call, createKey, expectError, failure } from './support/http';
import { nangoCli, nangoDeploy, prepareProject } from './support/nango-cli';
import { START_HOOK_TIMEOUT_MS, STACK_READY_TIMEOUT_MS, waitFor } from './support/processes';
import { writeProxyProvidersFile } from './support/proxy-fakes';
import { headerRecord, WebhookReceiver } from './support/webhook-receiver';

jest.setTimeout(180_000);

const API_KEY = 'fakehub-api-key';
const CONNECTION = 'conn-fakehub';

interface Listed {
  type: string;
  name: string;
  [key: string]: unknown;
}

describe('functions: deploy with the nango CLI, the functions API and actions', () => {
  let stack: Stack;
  let provider: ItemsProvider;
  let receiver: WebhookReceiver;
  let nango: Nango;
  let project: string;
  let temporalConnection: Connection | undefined;
  let temporal: Client;

  const api = (method: string, path: string, body?: unknown, key?: string) =>
    call(stack.gatewayUrl, method, path, {
      key: key ?? stack.secretKey,
      ...(body !== undefined ? { body } : {}),
    });

  beforeAll(async () => {
    [provider, receiver] = await Promise.all([startItemsProvider(API_KEY), new WebhookReceiver().start()]);
    stack = await startStack({
      env: { SWITCHBOARD_PROVIDERS_FILE: writeProxyProvidersFile() },
      serviceEnv: {
        gateway: { SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1' },
        proxy: { SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1' },
        'functions-runtime': { SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1' },
        // A runtime replica lost under an action is given up on after 6 s without its confirmation.
        'sync-orchestrator': { SWITCHBOARD_ACTION_HEARTBEAT_TIMEOUT_MS: '6000' },
        'webhook-relay': { SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1' },
      },
      readyTimeoutMs: STACK_READY_TIMEOUT_MS,
    });
    nango = new Nango({ secretKey: stack.secretKey, host: stack.gatewayUrl });
    temporalConnection = await Connection.connect({
      address: stack.envOf('sync-orchestrator').TEMPORAL_ADDRESS!,
    });
    temporal = new Client({ connection: temporalConnection });
    expect(
      (await api('POST', '/integrations', { provider: 'fake-api-key', unique_key: 'fakehub' })).status,
    ).toBe(200);
    const imported = await api('POST', '/connections', {
      provider_config_key: 'fakehub',
      connection_id: CONNECTION,
      credentials: { type: 'API_KEY', apiKey: API_KEY },
      connection_config: { origin: provider.url, account: 'acme' },
    });
    expect([200, 201]).toContain(imported.status);
    project = prepareProject('functions-project');
  }, START_HOOK_TIMEOUT_MS);

  afterAll(async () => {
    await temporalConnection?.close();
    await stack?.stop();
    await Promise.all([provider?.close(), receiver?.stop()]);
    if (project) rmSync(project, { recursive: true, force: true });
  });

  describe('nango deploy', () => {
    it('deploys the fixture project with the official CLI 0.71.10 and prints every function with its version', async () => {
      const run = await nangoDeploy(project, stack.gatewayUrl, stack.secretKey);
      expect({ code: run.code, stdout: run.stdout }).toEqual({
        code: 0,
        stdout: expect.stringContaining('Successfully deployed the functions'),
      });
      expect(run.stdout).toContain('✓ Deployed');
      expect(run.stdout).toContain('- summarize-items@v1.0.0');
      // No version in the script: the server gives the first one.
      expect(run.stdout).toContain('- refuse@v0.0.1');
      expect(run.stdout).toContain('- items@v0.1.0');
      // On-event scripts are deployed functions too: the answer lists them, so the CLI prints them.
      for (const onEvent of ['mark-onboarded', 'farewell', 'check-account']) {
        expect(run.stdout).toContain(`- ${onEvent}@v0.0.1`);
      }
      // The plan the CLI printed came from our confirmation answer.
      expect(run.stdout).toMatch(/summarize-items/);
    });

    it('lists the deployed functions of the integration with filters and pages', async () => {
      const all = await nango.listFunctions({ uniqueKey: 'fakehub' });
      expect(all.pagination).toEqual({ total: 8, page: 0, limit: 20 });
      expect(all.data.map((f) => `${f.type}:${f.name}`).sort()).toEqual([
        'action:refuse',
        'action:relay-summary',
        'action:slow-echo',
        'action:summarize-items',
        'on-event:check-account',
        'on-event:farewell',
        'on-event:mark-onboarded',
        'sync:items',
      ]);
      const actions = await nango.listFunctions({ uniqueKey: 'fakehub' }, { type: 'action' });
      expect(actions.data.map((f) => f.name).sort()).toEqual([
        'refuse',
        'relay-summary',
        'slow-echo',
        'summarize-items',
      ]);
      const searched = await nango.listFunctions({ uniqueKey: 'fakehub' }, { search: 'IZE-IT' });
      expect(searched.data.map((f) => f.name)).toEqual(['summarize-items']);
      const page = await nango.listFunctions({ uniqueKey: 'fakehub' }, { page: 1, limit: 3 });
      expect(page.pagination).toEqual({ total: 8, page: 1, limit: 3 });
      expect(page.data).toHaveLength(3);
      expectError(await api('GET', '/integrations/fakehub/functions?limit=101'), 400, 'invalid_query_params');
      expectError(await api('GET', '/integrations/nope/functions'), 404, 'not_found');
    });

    it('describes an action, a sync and an on-event script in the shapes Nango answers', async () => {
      const action = (await nango.getFunction({ uniqueKey: 'fakehub', name: 'summarize-items' }))
        .data as unknown as Listed;
      expect(action).toMatchObject({
        type: 'action',
        name: 'summarize-items',
        description: expect.stringContaining('Reads the account'),
        scopes: ['items:read'],
        input: 'ActionInput_fakehub_summarizeitems',
        returns: ['ActionOutput_fakehub_summarizeitems'],
        enabled: true,
        source: 'repo',
      });
      expect(typeof action.id).toBe('number');
      expect(new Date(action.last_deployed as string).toISOString()).toBe(action.last_deployed);
      const schema = action.json_schema as { definitions: Record<string, { required?: string[] }> };
      expect(schema.definitions.ActionInput_fakehub_summarizeitems?.required).toEqual(['owner']);

      const sync = (await nango.getFunction({ uniqueKey: 'fakehub', name: 'items' }))
        .data as unknown as Listed;
      expect(sync).toMatchObject({
        type: 'sync',
        returns: ['FakehubItem'],
        runs: 'every hour',
        auto_start: false,
        track_deletes: false,
      });
      const onEvent = (await nango.getFunction({ uniqueKey: 'fakehub', name: 'mark-onboarded' }))
        .data as unknown as Listed;
      expect(onEvent).toMatchObject({ type: 'on-event', event: 'post-connection-creation' });
      expect(onEvent).not.toHaveProperty('returns');

      expect(await failure(nango.getFunction({ uniqueKey: 'fakehub', name: 'nothing' }))).toMatchObject({
        status: 404,
        data: { error: { code: 'not_found' } },
      });
    });

    it("gives a function's TypeScript source, and asks for a type when two functions share a name", async () => {
      const code = await nango.getFunctionCode({ uniqueKey: 'fakehub', name: 'summarize-items' });
      expect(code.type).toBe('action');
      expect(code.code).toContain('createAction(');
      expect(code.code).toContain('nango.paginate');

      // A second function named "items" (an action beside the sync), through the raw endpoint in single mode.
      const bundle = readFileSync(join(project, 'build', 'fakehub_actions_refuse.cjs'), 'utf8');
      const single = await api('POST', '/sync/deploy', {
        flowConfigs: [
          {
            syncName: 'items',
            providerConfigKey: 'fakehub',
            type: 'action',
            models: [],
            runs: null,
            fileBody: { js: bundle, ts: '// items action' },
          },
        ],
        deployMode: 'single',
        reconcile: true,
      });
      expect(single.status).toBe(200);
      expect(single.body).toEqual([
        expect.objectContaining({
          name: 'items',
          type: 'action',
          version: '0.0.1',
          providerConfigKey: 'fakehub',
        }),
      ]);
      // single mode never deletes: everything deployed before is still there.
      expect((await nango.listFunctions({ uniqueKey: 'fakehub' })).pagination.total).toBe(9);

      const ambiguous = await failure(nango.getFunctionCode({ uniqueKey: 'fakehub', name: 'items' }));
      expect(ambiguous.status).toBe(409);
      expect(ambiguous.data).toEqual({
        error: {
          code: 'ambiguous_function',
          message: expect.any(String),
          payload: {
            matches: expect.arrayContaining([
              { type: 'action', name: 'items' },
              { type: 'sync', name: 'items' },
            ]),
          },
        },
      });
      expect((await failure(nango.getFunction({ uniqueKey: 'fakehub', name: 'items' }))).status).toBe(409);
      expect(
        await nango.getFunctionCode({ uniqueKey: 'fakehub', name: 'items' }, { type: 'action' }),
      ).toEqual({
        type: 'action',
        code: '// items action',
      });

      expect(await nango.deleteFunction({ uniqueKey: 'fakehub', name: 'items' }, { type: 'action' })).toEqual(
        {
          data: { success: true },
        },
      );
      expect((await nango.getFunction({ uniqueKey: 'fakehub', name: 'items' })).data.type).toBe('sync');
      expectError(await api('DELETE', '/integrations/fakehub/functions/items'), 400, 'invalid_query_params');
    });

    it('answers the scripts config natively and as OpenAI tools', async () => {
      const config = (await nango.getScriptsConfig()) as unknown as {
        providerConfigKey: string;
        provider: string;
        syncs: Listed[];
        actions: Listed[];
        'on-events': Listed[];
      }[];
      expect(config).toHaveLength(1);
      const [fakehub] = config;
      expect(fakehub).toMatchObject({ providerConfigKey: 'fakehub', provider: 'fake-api-key' });
      expect(fakehub!.syncs.map((s) => s.name)).toEqual(['items']);
      expect(fakehub!.actions.map((a) => a.name).sort()).toEqual([
        'refuse',
        'relay-summary',
        'slow-echo',
        'summarize-items',
      ]);
      expect(fakehub!['on-events'].map((o) => o.name)).toEqual([
        'check-account',
        'farewell',
        'mark-onboarded',
      ]);
      // Nango's models list for zero-yaml functions (clients map over it): each schema definition by name.
      expect(fakehub!.syncs[0]).toMatchObject({
        models: [{ name: 'FakehubItem', fields: [] }],
        is_public: false,
        pre_built: false,
      });
      for (const fn of [...fakehub!.actions, ...fakehub!['on-events']]) {
        expect(fn).toMatchObject({ models: expect.any(Array), is_public: false, pre_built: false });
      }
      expect(
        (fakehub!.actions.find((a) => a.name === 'summarize-items')!.models as { name: string }[])
          .map((m) => m.name)
          .sort(),
      ).toEqual(['ActionInput_fakehub_summarizeitems', 'ActionOutput_fakehub_summarizeitems']);
      expect(fakehub!.actions.find((a) => a.name === 'summarize-items')).toMatchObject({
        version: '1.0.0',
        endpoints: [{ method: 'POST', path: '/fakehub/summary', group: 'Items' }],
        sdk_version: '0.71.10-zero',
        json_schema: expect.objectContaining({ definitions: expect.any(Object) }),
      });

      const openai = (await nango.getScriptsConfig('openai')) as unknown as {
        data: { name: string; description: string; parameters: Record<string, unknown> }[];
      };
      const tool = openai.data.find((f) => f.name === 'summarize-items');
      expect(tool).toEqual({
        name: 'summarize-items',
        description: expect.stringContaining('Reads the account'),
        parameters: expect.objectContaining({
          type: 'object',
          properties: expect.objectContaining({ owner: { type: 'string', minLength: 1 } }),
          required: ['owner'],
        }),
      });
      expect(openai.data.map((f) => f.name).sort()).toEqual([
        'refuse',
        'relay-summary',
        'slow-echo',
        'summarize-items',
      ]);
    });

    it('needs environment:functions:read to read and environment:functions:write to deploy or delete', async () => {
      const reader = await createKey(stack.gatewayUrl, stack.secretKey, ['environment:functions:read']);
      expect((await api('GET', '/integrations/fakehub/functions', undefined, reader)).status).toBe(200);
      expectError(
        await api('POST', '/sync/deploy/confirmation', { flowConfigs: [] }, reader),
        403,
        'forbidden',
      );
      expectError(
        await api('DELETE', '/integrations/fakehub/functions/refuse?type=action', undefined, reader),
        403,
        'forbidden',
      );
    });

    it("prints the server's error for a deploy to an integration that does not exist, and stores nothing", async () => {
      const bad = prepareProject('functions-project');
      try {
        const index = join(bad, 'index.ts');
        // A second integration folder nobody created in this environment.
        mkdirSync(join(bad, 'ghosthub', 'actions'), { recursive: true });
        copyFileSync(
          join(bad, 'fakehub', 'actions', 'refuse.ts'),
          join(bad, 'ghosthub', 'actions', 'boo.ts'),
        );
        writeFileSync(index, `${readFileSync(index, 'utf8')}import './ghosthub/actions/boo.js';\n`);
        const run = await nangoDeploy(bad, stack.gatewayUrl, stack.secretKey);
        expect(run.code).toBe(11);
        expect(run.stdout).not.toContain('Successfully deployed');
        expect(run.stdout).toMatch(
          /Integration "ghosthub" does not exist in environment "\w+".*\(unknown_provider_config\)/,
        );
      } finally {
        rmSync(bad, { recursive: true, force: true });
      }
      expect((await nango.listFunctions({ uniqueKey: 'fakehub' })).pagination.total).toBe(8);
    });

    it('deploys a body larger than one NATS message (several bundles near the cap)', async () => {
      const bundle = readFileSync(join(project, 'build', 'fakehub_actions_refuse.cjs'), 'utf8');
      const names = ['big-a', 'big-b', 'big-c'];
      const res = await api('POST', '/sync/deploy', {
        flowConfigs: names.map((name) => ({
          syncName: name,
          providerConfigKey: 'fakehub',
          type: 'action',
          models: [],
          runs: null,
          // Real bundles carry inline source maps; this padding stands in for one.
          fileBody: { js: `${bundle}\n//# ${'x'.repeat(600 * 1024)}` },
        })),
        deployMode: 'single',
      });
      expect(res.status).toBe(200);
      expect((res.body as { name: string }[]).map((r) => r.name)).toEqual(names);
      const code = await nango.getFunctionCode({ uniqueKey: 'fakehub', name: 'big-b' });
      expect(code.code.length).toBeGreaterThan(600 * 1024);
      for (const name of names)
        await nango.deleteFunction({ uniqueKey: 'fakehub', name }, { type: 'action' });
    });

    it('refuses a CLI too old for the deploy payload with a message the CLI prints', async () => {
      const res = await call(stack.gatewayUrl, 'POST', '/sync/deploy/confirmation', {
        key: stack.secretKey,
        headers: { 'user-agent': 'nango-cli/0.39.0 (linux/6.1; node.js/18.0.0)' },
        body: { flowConfigs: [] },
      });
      const error = expectError(res, 400, 'invalid_cli_version');
      expect(error.message).toContain('0.39.25');
    });

    it('refuses a bundle over the size cap and a bad script name in the documented error shape', async () => {
      const flow = {
        syncName: 'big',
        providerConfigKey: 'fakehub',
        type: 'action',
        models: [],
        fileBody: { js: 'x'.repeat(800 * 1024) },
      };
      const big = expectError(
        await api('POST', '/sync/deploy', { flowConfigs: [flow] }),
        400,
        'invalid_body',
      );
      expect(big.errors?.[0]?.path).toEqual(['flowConfigs', 0, 'fileBody', 'js']);
      expectError(
        await api('POST', '/sync/deploy', {
          flowConfigs: [{ ...flow, syncName: 'no spaces', fileBody: { js: 'x' } }],
        }),
        400,
        'invalid_body',
      );
      expect((await nango.listFunctions({ uniqueKey: 'fakehub' })).pagination.total).toBe(8);
    });
  });

  describe('actions', () => {
    it('runs an action synchronously: nango.get and nango.paginate through the proxy, its output as the answer', async () => {
      const before = provider.seen.length;
      const output = (await nango.triggerAction('fakehub', CONNECTION, 'summarize-items', {
        owner: 'acme',
      })) as { account: string; count: number; names: string[]; summary: string };
      expect(output).toEqual({
        account: 'acme',
        count: ITEM_NAMES.length,
        names: ITEM_NAMES,
        summary: `acme has ${ITEM_NAMES.length} items`,
      });
      // One account call and three pages of two, each with the connection's key.
      const calls = provider.seen.slice(before);
      expect(calls.map((c) => new URL(c.url, 'http://x').pathname)).toEqual([
        '/v2/account',
        '/v2/items',
        '/v2/items',
        '/v2/items',
      ]);
      expect(calls.every((c) => c.headers['x-api-key'] === API_KEY)).toBe(true);
    });

    it('lets a script trigger another action (nango.triggerAction) and use its output', async () => {
      expect(await nango.triggerAction('fakehub', CONNECTION, 'relay-summary', { owner: 'acme' })).toEqual({
        relayed: ITEM_NAMES.length,
      });
    });

    it('answers an output larger than one NATS message, and refuses one over 10 MB', async () => {
      const big = (await nango.triggerAction('fakehub', CONNECTION, 'slow-echo', {
        waitMs: 0,
        padBytes: 2 * 1024 * 1024,
      })) as { build: string; pad: string };
      expect(big.build).toBe('first');
      expect(big.pad).toHaveLength(2 * 1024 * 1024);
      const tooBig = await failure(
        nango.triggerAction('fakehub', CONNECTION, 'slow-echo', { waitMs: 0, padBytes: 11 * 1024 * 1024 }),
      );
      expect(tooBig).toMatchObject({ status: 500, data: { error: { code: 'action_output_too_large' } } });
    });

    it("shows the metadata the script wrote through the connections API, and the run's logs", async () => {
      const res = await call(stack.gatewayUrl, 'POST', '/action/trigger', {
        key: stack.secretKey,
        headers: { 'connection-id': CONNECTION, 'provider-config-key': 'fakehub' },
        body: { action_name: 'summarize-items', input: { owner: 'acme', pageSize: 5 } },
      });
      expect(res.status).toBe(200);
      const runId = res.headers.get('x-switchboard-run-id');
      expect(runId).toMatch(/^[0-9a-f-]{36}$/);
      const connection = (await nango.getConnection('fakehub', CONNECTION)) as {
        metadata: Record<string, unknown>;
      };
      expect(connection.metadata).toMatchObject({ last_summary_count: ITEM_NAMES.length });
      const logs = await api('GET', `/functions/runs/${runId}/logs`);
      expect(logs.status).toBe(200);
      expect(logs.body).toMatchObject({
        data: {
          id: runId,
          function: 'summarize-items',
          type: 'action',
          status: 'succeeded',
          attempts: 1,
          logs: expect.arrayContaining([
            expect.objectContaining({ message: expect.stringContaining('read 5 items for acme') }),
          ]),
        },
      });
    });

    it("answers an ActionError as Nango does: 500 action_script_runtime_error with the script's payload", async () => {
      const failed = await failure(nango.triggerAction('fakehub', CONNECTION, 'refuse', { reason: 'nope' }));
      expect(failed).toEqual({
        status: 500,
        data: {
          error: {
            code: 'action_script_runtime_error',
            message: expect.any(String),
            payload: expect.objectContaining({ reason: 'nope' }),
          },
        },
      });
    });

    it('refuses unknown actions and connections, bad input and bad headers with coded errors', async () => {
      expect(await failure(nango.triggerAction('fakehub', CONNECTION, 'nothing', {}))).toMatchObject({
        status: 404,
        data: { error: { code: 'not_found' } },
      });
      expect(
        await failure(nango.triggerAction('fakehub', 'no-such-conn', 'summarize-items', {})),
      ).toMatchObject({
        status: 404,
        data: { error: { code: 'unknown_connection' } },
      });
      expect(await failure(nango.triggerAction('nohub', CONNECTION, 'summarize-items', {}))).toMatchObject({
        status: 404,
        data: { error: { code: 'unknown_provider_config' } },
      });
      const badInput = await failure(
        nango.triggerAction('fakehub', CONNECTION, 'summarize-items', { owner: 7 }),
      );
      expect(badInput).toMatchObject({ status: 400, data: { error: { code: 'invalid_action_input' } } });
      // The input's limit is the body limit (the bundle goes to the sandbox by its hash, not beside it).
      const huge = await failure(
        nango.triggerAction('fakehub', CONNECTION, 'summarize-items', { owner: 'x'.repeat(1024 * 1024) }),
      );
      expect(huge).toMatchObject({ status: 413, data: { error: { code: 'payload_too_large' } } });
      const res = await call(stack.gatewayUrl, 'POST', '/action/trigger', {
        key: stack.secretKey,
        headers: {
          'connection-id': CONNECTION,
          'provider-config-key': 'fakehub',
          'x-async': 'true',
          'x-max-retries': '9',
        },
        body: { action_name: 'summarize-items', input: { owner: 'acme' } },
      });
      expectError(res, 400, 'invalid_headers');
    });

    it('runs an action asynchronously: 202, 404 until done, then the output and a signed async_action webhook', async () => {
      const settings = await api('PATCH', '/environment', {
        webhook_settings: { primary_url: `${receiver.url}/hooks`, on_async_action_completion: true },
      });
      expect(settings.status).toBe(200);
      const signingKey = (
        (await api('GET', '/environment')).body as { data: { webhook_signing_key: string } }
      ).data.webhook_signing_key;

      const accepted = await call(stack.gatewayUrl, 'POST', '/action/trigger', {
        key: stack.secretKey,
        headers: {
          'connection-id': CONNECTION,
          'provider-config-key': 'fakehub',
          'x-async': 'true',
          'x-max-retries': '1',
        },
        body: { action_name: 'summarize-items', input: { owner: 'acme' } },
      });
      expect(accepted.status).toBe(202);
      const { id, statusUrl } = accepted.body as { id: string; statusUrl: string };
      expect(statusUrl).toBe(`/action/${id}`);
      expect(accepted.headers.get('location')).toBe(statusUrl);

      const started = Date.now();
      let result: unknown;
      for (;;) {
        try {
          result = await nango.getAsyncActionResult({ statusUrl });
          break;
        } catch (error) {
          const response = (error as { response?: { status: number; data: unknown } }).response;
          expect(response).toMatchObject({ status: 404, data: { error: { code: 'not_found' } } });
          if (Date.now() - started > 60_000) throw new Error('the async action never finished');
          await new Promise((r) => setTimeout(r, 200));
        }
      }
      expect(result).toMatchObject({ account: 'acme', count: ITEM_NAMES.length });

      const [hook] = await receiver.waitFor(1, '/hooks', 30_000);
      expect(JSON.parse(hook!.body)).toEqual({
        from: 'nango',
        type: 'async_action',
        connectionId: CONNECTION,
        providerConfigKey: 'fakehub',
        payload: { id, statusUrl },
      });
      const headers = headerRecord(hook!.headers);
      expect(() => new Webhook(signingKey).verify(hook!.body, headers)).not.toThrow();
      expect(
        new Nango({ secretKey: stack.secretKey, webhookSigningKey: signingKey }).verifyIncomingWebhookRequest(
          hook!.body,
          headers,
        ),
      ).toBe(true);
    });

    it("answers a failed async action's result with the script's error, and an unknown id with 404", async () => {
      const { id } = (await nango.triggerActionAsync('fakehub', CONNECTION, 'refuse', {
        reason: 'later',
      })) as {
        id: string;
      };
      const started = Date.now();
      for (;;) {
        const res = await api('GET', `/action/${id}`);
        if (res.status !== 404) {
          expect(res.status).toBe(500);
          expect(res.body).toMatchObject({
            error: {
              code: 'action_script_runtime_error',
              payload: expect.objectContaining({ reason: 'later' }),
            },
          });
          break;
        }
        if (Date.now() - started > 60_000) throw new Error('the async action never finished');
        await new Promise((r) => setTimeout(r, 200));
      }
      expectError(await api('GET', '/action/00000000-0000-4000-8000-000000000000'), 404, 'not_found');
    });
  });

  describe('retries', () => {
    it('tries a failing async action 1 + X-Max-Retries times, then answers its error', async () => {
      const accepted = await call(stack.gatewayUrl, 'POST', '/action/trigger', {
        key: stack.secretKey,
        headers: {
          'connection-id': CONNECTION,
          'provider-config-key': 'fakehub',
          'x-async': 'true',
          'x-max-retries': '2',
        },
        body: { action_name: 'refuse', input: { reason: 'again' } },
      });
      expect(accepted.status).toBe(202);
      const { id } = accepted.body as { id: string };
      expect(accepted.headers.get('x-switchboard-run-id')).toBe(id);
      const started = Date.now();
      for (;;) {
        const res = await api('GET', `/action/${id}`);
        if (res.status !== 404) {
          expect(res.status).toBe(500);
          break;
        }
        if (Date.now() - started > 60_000) throw new Error('the async action never finished');
        await new Promise((r) => setTimeout(r, 250));
      }
      const logs = await api('GET', `/functions/runs/${id}/logs`);
      expect(logs.body).toMatchObject({ data: { status: 'failed', attempts: 3 } });
    });
  });

  describe('two orchestrator replicas', () => {
    it("answers a run's logs right after its action, whichever replica the logs request reaches", async () => {
      // The action is answered before its run row is written; the logs request may reach the other replica.
      const second = await stack.startReplica('sync-orchestrator');
      try {
        for (let i = 0; i < 20; i++) {
          const res = await call(stack.gatewayUrl, 'POST', '/action/trigger', {
            key: stack.secretKey,
            headers: { 'connection-id': CONNECTION, 'provider-config-key': 'fakehub' },
            body: { action_name: 'summarize-items', input: { owner: `acme-${i}`, pageSize: 5 } },
          });
          expect(res.status).toBe(200);
          const runId = res.headers.get('x-switchboard-run-id');
          const logs = await api('GET', `/functions/runs/${runId}/logs`);
          expect({ status: logs.status, body: logs.body }).toMatchObject({
            status: 200,
            body: {
              data: {
                id: runId,
                status: 'succeeded',
                logs: expect.arrayContaining([
                  expect.objectContaining({ message: expect.stringContaining(`read 5 items for acme-${i}`) }),
                ]),
              },
            },
          });
        }
      } finally {
        // The tests after this one run against one replica again.
        await new Promise((resolve) => {
          second.process.once('exit', resolve);
          second.process.kill('SIGTERM');
        });
      }
    });
  });

  describe('a functions-runtime replica killed mid-run', () => {
    it('ends its actions within the lease: an async one retried on the other replica, the others failed with function_runtime_lost', async () => {
      const hold = provider.holdAccount();
      const trigger = (headers: Record<string, string>, owner: string) =>
        call(stack.gatewayUrl, 'POST', '/action/trigger', {
          key: stack.secretKey,
          headers: { 'connection-id': CONNECTION, 'provider-config-key': 'fakehub', ...headers },
          body: { action_name: 'summarize-items', input: { owner, pageSize: 5 } },
        });
      const synchronous = trigger({}, 'sync-killed');
      const retried = await trigger({ 'x-async': 'true', 'x-max-retries': '1' }, 'async-retried');
      const once = await trigger({ 'x-async': 'true', 'x-max-retries': '0' }, 'async-once');
      expect([retried.status, once.status]).toEqual([202, 202]);
      const retriedId = (retried.body as { id: string }).id;
      const onceId = (once.body as { id: string }).id;
      // The three scripts wait on the provider, on the one runtime replica there is; a second one starts.
      await waitFor('the three scripts to call the provider', async () =>
        hold.held >= 3 ? true : undefined,
      );
      const doomed = stack.replicas['functions-runtime'][0]!;
      await stack.startReplica('functions-runtime');
      const exited = new Promise((resolve) => doomed.process.once('exit', resolve));
      doomed.process.kill('SIGKILL');
      await exited;
      const killedAt = Date.now();
      hold.release();

      const ended = (id: string) =>
        waitFor(
          `the async action ${id} to end`,
          async () => {
            const res = await api('GET', `/action/${id}`);
            return res.status === 404 ? undefined : { res, at: Date.now() };
          },
          90_000,
          250,
        );
      const [sync, retriedEnd, onceEnd] = await Promise.all([
        synchronous.then((res) => ({ res, at: Date.now() })),
        ended(retriedId),
        ended(onceId),
      ]);
      // Given up on within the lease (6 s) and a few renewals, not the action's 15 min time limit.
      expect(sync.at - killedAt).toBeLessThan(20_000);
      expect(onceEnd.at - killedAt).toBeLessThan(20_000);
      expect(retriedEnd.at - killedAt).toBeLessThan(40_000);

      // The synchronous action: a clear 503 the caller may retry, not a hang.
      expect(sync.res.status).toBe(503);
      expect(sync.res.headers.get('retry-after')).toBeTruthy();
      expect(sync.res.body).toMatchObject({
        error: { code: 'function_runtime_lost', message: expect.stringContaining('functions-runtime') },
      });
      // X-Max-Retries: 1: the second attempt ran on the surviving replica and its output is the answer.
      expect(retriedEnd.res.status).toBe(200);
      expect(retriedEnd.res.body).toMatchObject({ account: 'acme', count: 5, names: ITEM_NAMES });
      expect((await api('GET', `/functions/runs/${retriedId}/logs`)).body).toMatchObject({
        data: { status: 'succeeded', attempts: 2 },
      });
      // X-Max-Retries: 0: failed with the coded error naming the run, and that answer is final.
      expect(onceEnd.res.status).toBe(503);
      expect(onceEnd.res.body).toMatchObject({
        error: { code: 'function_runtime_lost', payload: { run_id: onceId } },
      });
      expect((await api('GET', `/functions/runs/${onceId}/logs`)).body).toMatchObject({
        data: { status: 'failed', attempts: 1 },
      });
      const again = await api('GET', `/action/${onceId}`);
      expect({ status: again.status, body: again.body }).toEqual({
        status: onceEnd.res.status,
        body: onceEnd.res.body,
      });
    });

    it('an async action whose worker is SIGKILLed is run again by another worker once the first script is stopped', async () => {
      const hold = provider.holdAccount();
      try {
        const accepted = await call(stack.gatewayUrl, 'POST', '/action/trigger', {
          key: stack.secretKey,
          headers: {
            'connection-id': CONNECTION,
            'provider-config-key': 'fakehub',
            'x-async': 'true',
            'x-max-retries': '0',
          },
          body: { action_name: 'summarize-items', input: { owner: 'worker-killed', pageSize: 5 } },
        });
        expect(accepted.status).toBe(202);
        const { id } = accepted.body as { id: string };
        await waitFor('the script to call the provider', async () => (hold.held >= 1 ? true : undefined));
        const doomed = stack.workers[0]!;
        stack.startWorker();
        const exited = new Promise((resolve) => doomed.process.once('exit', resolve));
        doomed.process.kill('SIGKILL');
        await exited;
        const killedAt = Date.now();
        // The dead worker renews nothing: its script is stopped (lease or cancel) before the retry calls out.
        await waitFor(
          'the first script to be stopped',
          async () =>
            new RegExp(`stopping ${id} \\(attempt 1\\)`).test(stack.logs('functions-runtime'))
              ? true
              : undefined,
          30_000,
          200,
        );
        await waitFor(
          'the retried script to call the provider',
          async () => (hold.held >= 2 ? true : undefined),
          30_000,
        );
        hold.release();
        const ended = await waitFor(
          'the async action to end',
          async () => {
            const res = await api('GET', `/action/${id}`);
            return res.status === 404 ? undefined : res;
          },
          30_000,
          250,
        );
        expect(Date.now() - killedAt).toBeLessThan(40_000);
        expect({ status: ended.status, body: ended.body }).toMatchObject({
          status: 200,
          body: { account: 'acme', count: 5, names: ITEM_NAMES },
        });
        // One attempt of the action (X-Max-Retries 0): the worker's death is not the script's failure.
        expect((await api('GET', `/functions/runs/${id}/logs`)).body).toMatchObject({
          data: { status: 'succeeded', attempts: 1 },
        });
      } finally {
        hold.release();
      }
    });
  });

  describe('versions', () => {
    /** One action of the fakehub integration deployed on its own (the raw endpoint in single mode). */
    const deployAction = (flow: Record<string, unknown>) =>
      api('POST', '/sync/deploy', {
        flowConfigs: [{ providerConfigKey: 'fakehub', type: 'action', runs: null, ...flow }],
        deployMode: 'single',
      });

    it('takes an input at the body limit for an action whose bundle is near its size cap', async () => {
      const bundle = readFileSync(join(project, 'build', 'fakehub_actions_slow-echo.cjs'), 'utf8');
      const deployed = await deployAction({
        syncName: 'big-echo',
        models: ['ActionOutput_fakehub_slowecho'],
        // Real bundles carry inline source maps; this padding stands in for one (the cap is 768 KiB).
        fileBody: { js: `${bundle}\n//# ${'x'.repeat(700 * 1024)}` },
      });
      expect(deployed.status).toBe(200);
      // The documented limit is the gateway's body limit (SWITCHBOARD_BODY_LIMIT_BYTES, 1 MiB): the
      // request's envelope and the input together, a few bytes short of it.
      const envelope = JSON.stringify({ action_name: 'big-echo', input: { waitMs: 0, blob: '' } });
      const blob = 'y'.repeat(1024 * 1024 - Buffer.byteLength(envelope) - 16);
      const res = await call(stack.gatewayUrl, 'POST', '/action/trigger', {
        key: stack.secretKey,
        headers: { 'connection-id': CONNECTION, 'provider-config-key': 'fakehub' },
        body: { action_name: 'big-echo', input: { waitMs: 0, blob } },
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ build: 'first' });
      await nango.deleteFunction({ uniqueKey: 'fakehub', name: 'big-echo' }, { type: 'action' });
    });

    it('keeps a running invocation on the version it started with while a redeploy swaps in a new one', async () => {
      const { id } = (await nango.triggerActionAsync('fakehub', CONNECTION, 'slow-echo', {
        waitMs: 3000,
      })) as {
        id: string;
      };
      // A new build of the same action, deployed while the first run is still waiting.
      const bundle = readFileSync(join(project, 'build', 'fakehub_actions_slow-echo.cjs'), 'utf8');
      expect(bundle).toContain('"first"');
      const redeployed = await deployAction({
        syncName: 'slow-echo',
        models: ['ActionOutput_fakehub_slowecho'],
        version: '2.0.0',
        fileBody: { js: bundle.replaceAll('"first"', '"second"') },
      });
      expect(redeployed.body).toEqual([expect.objectContaining({ name: 'slow-echo', version: '2.0.0' })]);
      expect(await nango.triggerAction('fakehub', CONNECTION, 'slow-echo', { waitMs: 0 })).toEqual({
        build: 'second',
      });

      const started = Date.now();
      for (;;) {
        const res = await api('GET', `/action/${id}`);
        if (res.status === 200) {
          expect(res.body).toEqual({ build: 'first' });
          break;
        }
        expect(res.status).toBe(404);
        if (Date.now() - started > 60_000) throw new Error('the async action never finished');
        await new Promise((r) => setTimeout(r, 200));
      }
    });
  });

  describe('redeploy', () => {
    it('reconciles: functions removed from the project are deleted with their schedules and records, the rest keep their versions', async () => {
      const before = (await nango.getFunction({ uniqueKey: 'fakehub', name: 'summarize-items' }))
        .data as unknown as Listed;
      // The sync about to go: its connection's Temporal schedule (paused: autoStart false) and, after a
      // triggered run, its records.
      const items = { providerConfigKey: 'fakehub', connectionId: CONNECTION, model: 'FakehubItem' };
      const [itemsSync] = (await nango.syncStatus('fakehub', ['items'], CONNECTION)).syncs;
      const itemsSchedule = temporal.schedule.getHandle(`sync-${itemsSync!.id}`);
      expect((await itemsSchedule.describe()).state.paused).toBe(true);
      await nango.triggerSync('fakehub', ['items'], CONNECTION);
      const saved = await waitFor('the items sync to save records', async () => {
        const listed = await nango.listRecords(items);
        return listed.records.length > 0 ? listed.records : undefined;
      });
      // One batch shares its updated_at, so its records come in row id order (uuidv5 of the scope): sorted.
      expect(saved.map((r) => r.name).sort()).toEqual(ITEM_NAMES.slice(0, saved.length).sort());
      const index = join(project, 'index.ts');
      writeFileSync(
        index,
        readFileSync(index, 'utf8')
          .split('\n')
          .filter((line) => !line.includes('refuse') && !line.includes('syncs/items'))
          .join('\n'),
      );
      rmSync(join(project, 'fakehub', 'actions', 'refuse.ts'));
      rmSync(join(project, 'fakehub', 'syncs', 'items.ts'));
      const run = await nangoDeploy(project, stack.gatewayUrl, stack.secretKey);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('Successfully deployed the functions');
      const after = await nango.listFunctions({ uniqueKey: 'fakehub' });
      expect(after.data.map((f) => `${f.type}:${f.name}`).sort()).toEqual([
        'action:relay-summary',
        'action:slow-echo',
        'action:summarize-items',
        'on-event:check-account',
        'on-event:farewell',
        'on-event:mark-onboarded',
      ]);
      const same = (await nango.getFunction({ uniqueKey: 'fakehub', name: 'summarize-items' }))
        .data as unknown as Listed;
      expect(same.id).toBe(before.id);
      expect(
        await failure(nango.triggerAction('fakehub', CONNECTION, 'refuse', { reason: 'x' })),
      ).toMatchObject({
        status: 404,
        data: { error: { code: 'not_found' } },
      });
      // The removed sync took its schedule, its status and its records with it.
      await expect(itemsSchedule.describe()).rejects.toBeInstanceOf(ScheduleNotFoundError);
      expect((await nango.syncStatus('fakehub', ['items'], CONNECTION)).syncs).toEqual([]);
      expect((await nango.listRecords(items)).records).toEqual([]);
    });
  });

  describe('a legacy nango.yaml project', () => {
    it('is refused by the CLI 0.71.10 deploy as it is, and deploys once the same CLI migrated it', async () => {
      const legacy = prepareProject('legacy-yaml-project');
      try {
        // The CLI itself refuses: its deploy only accepts zero-yaml folders (e2e/README.md quotes the source).
        const refused = await nangoDeploy(legacy, stack.gatewayUrl, stack.secretKey, [
          '--action',
          'legacy-greet',
        ]);
        expect(refused.code).toBe(1);
        expect(refused.stderr).toContain(
          'The `nango.yaml` configuration file is deprecated. See the migration guide to Zero YAML',
        );
        const before = await nango.listFunctions({ uniqueKey: 'fakehub' });
        expect(before.data.map((f) => f.name)).not.toContain('legacy-greet');

        // The CLI's own migration turns nango.yaml + runAction into createAction with zod models.
        const migrated = await nangoCli(legacy, ['migrate-to-zero-yaml', '--no-interactive']);
        expect(migrated.stdout).toContain('Deleting nango.yaml');
        const run = await nangoDeploy(legacy, stack.gatewayUrl, stack.secretKey, [
          '--action',
          'legacy-greet',
        ]);
        expect(run.stdout).toContain('Successfully deployed the functions');
        expect(await nango.triggerAction('fakehub', CONNECTION, 'legacy-greet', { name: 'Ada' })).toEqual({
          message: 'Hello Ada from acme',
        });
        const described = (await nango.getFunction({ uniqueKey: 'fakehub', name: 'legacy-greet' }))
          .data as unknown as Listed;
        expect(described).toMatchObject({ type: 'action', name: 'legacy-greet' });
        await nango.deleteFunction({ uniqueKey: 'fakehub', name: 'legacy-greet' }, { type: 'action' });
      } finally {
        rmSync(legacy, { recursive: true, force: true });
      }
    });
  });

  describe('switchboard deploy', () => {
    it('deploys the compiled project with our own CLI, printing the plan and the versions', async () => {
      const run = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          [
            join(repoRoot(), 'packages', 'cli', 'dist', 'main.js'),
            '--host',
            stack.gatewayUrl,
            '--key',
            stack.secretKey,
            'deploy',
            project,
            '--integration',
            'fakehub',
          ],
          { timeout: 60_000 },
          (error, stdout, stderr) =>
            resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
        );
      });
      expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
      expect(run.stdout).toContain('updated action: fakehub/summarize-items');
      expect(run.stdout).toContain('- fakehub/summarize-items@v1.0.0');
      expect(run.stdout.trim().split('\n').pop()).toBe('Deployed');
      // The same project as the nango CLI deployed: nothing added, nothing removed.
      const listed = await nango.listFunctions({ uniqueKey: 'fakehub' });
      expect(listed.data.map((f) => `${f.type}:${f.name}`).sort()).toEqual([
        'action:relay-summary',
        'action:slow-echo',
        'action:summarize-items',
        'on-event:check-account',
        'on-event:farewell',
        'on-event:mark-onboarded',
      ]);
    });
  });

  describe('on-event scripts', () => {
    /** What the connect page does when an end user submits an API key in a connect session. */
    const connectWithKey = async (endUserId: string, apiKey: string) => {
      const session = await api('POST', '/connect/sessions', {
        end_user: { id: endUserId },
        allowed_integrations: ['fakehub'],
        // The catalog entry requires these (its origin pinned to the fakes on loopback).
        integrations_config_defaults: {
          fakehub: { connection_config: { origin: provider.url, account: 'acme' } },
        },
      });
      if (session.status !== 201) throw new Error(session.text);
      const token = (session.body as { data: { token: string } }).data.token;
      return call(
        stack.gatewayUrl,
        'POST',
        `/api-auth/api-key/fakehub?connect_session_token=${encodeURIComponent(token)}`,
        { body: { apiKey } },
      );
    };

    it('refuses a new connection its validate-connection script rejects: the reason, and nothing stored', async () => {
      const before = provider.seen.length;
      const refused = await connectWithKey('refused-user', 'a-key-fakehub-never-issued');
      // The status, code and message the connect page shows the end user (its #form-error).
      expectError(refused, 400, 'connection_validation_failed');
      expect((refused.body as { error: { message: string } }).error.message).toBe(
        'fakehub does not know this API key: copy it again from Settings, API keys',
      );
      // The script called the provider through the proxy with the candidate key, never stored.
      const checks = provider.seen.slice(before).filter((c) => c.url === '/v2/account');
      expect(checks.map((c) => c.headers['x-api-key'])).toEqual(['a-key-fakehub-never-issued']);
      expect(await nango.listConnections({ userId: 'refused-user' })).toEqual({ connections: [] });
      const listed = await api('GET', '/connections?integrationId=fakehub');
      expect(
        (listed.body as { connections: { end_user: { id: string } | null }[] }).connections.filter(
          (c) => c.end_user?.id === 'refused-user',
        ),
      ).toEqual([]);
    });

    describe('POST /connections (import)', () => {
      const HOOKS = '/import-hooks';
      /** An import of a fakehub key, its auth webhooks routed to a path of their own. */
      const importKey = (connectionId: string, apiKey: string, account = 'acme') =>
        api('POST', '/connections', {
          provider_config_key: 'fakehub',
          connection_id: connectionId,
          credentials: { type: 'API_KEY', apiKey },
          connection_config: { origin: provider.url, account },
          webhook_url_override: `${receiver.url}${HOOKS}`,
        });
      /** The keys the validate-connection script sent to fakehub's `/v2/account` since `before`. */
      const keysChecked = (before: number) =>
        provider.seen
          .slice(before)
          .filter((c) => c.url === '/v2/account')
          .map((c) => c.headers['x-api-key']);
      const listedIds = async (connectionId: string) => {
        const listed = await api('GET', `/connections?connectionId=${connectionId}`);
        expect(listed.status).toBe(200);
        return (listed.body as { connections: { connection_id: string }[] }).connections.map(
          (c) => c.connection_id,
        );
      };
      const storedKey = async (connectionId: string) =>
        ((await nango.getConnection('fakehub', connectionId)) as { credentials: { apiKey?: string } })
          .credentials.apiKey;
      /** The auth webhooks sent for imports, once every one the stack had cause to send is out. */
      const importHooks = async () => {
        await authWebhooksSettled(stack);
        return receiver.on(HOOKS).map((h) => {
          const body = JSON.parse(h.body) as Record<string, unknown>;
          return { connectionId: body.connectionId, operation: body.operation, success: body.success };
        });
      };

      it('refuses an import its validate-connection script rejects: the reason, nothing stored, no webhook', async () => {
        const before = provider.seen.length;
        const refused = await importKey('imported-refused', 'a-key-fakehub-never-issued');
        // The shape a refused connect flow answers, with the reason the script gave.
        expect({ status: refused.status, body: refused.body }).toEqual({
          status: 400,
          body: {
            error: {
              code: 'connection_validation_failed',
              message: 'fakehub does not know this API key: copy it again from Settings, API keys',
            },
          },
        });
        // The script ran with the candidate key (never stored) through the proxy.
        expect(keysChecked(before)).toEqual(['a-key-fakehub-never-issued']);

        // A key fakehub knows, for another account than the one configured: the script saw the candidate
        // connection config too.
        const otherAccount = await importKey('imported-refused', API_KEY, 'globex');
        expectError(otherAccount, 400, 'connection_validation_failed');
        expect((otherAccount.body as { error: { message: string } }).error.message).toBe(
          'This key belongs to the fakehub account "acme", not "globex"',
        );

        expect(await listedIds('imported-refused')).toEqual([]);
        expect(await failure(nango.getConnection('fakehub', 'imported-refused'))).toMatchObject({
          status: 404,
        });
      });

      it('stores an import the script accepts (201) and announces it once', async () => {
        const before = provider.seen.length;
        const accepted = await importKey('imported-accepted', API_KEY);
        expect(accepted.status).toBe(201);
        expect(accepted.body).toMatchObject({
          connection_id: 'imported-accepted',
          provider_config_key: 'fakehub',
        });
        expect(keysChecked(before)).toEqual([API_KEY]);
        expect(await listedIds('imported-accepted')).toEqual(['imported-accepted']);
        expect(await storedKey('imported-accepted')).toBe(API_KEY);
        await receiver.waitFor(1, HOOKS);
        // Only the stored connection was announced: the refused imports before it sent nothing.
        expect(await importHooks()).toEqual([
          { connectionId: 'imported-accepted', operation: 'creation', success: true },
        ]);
      });

      it('checks an import over an existing connection like a reconnect: a refusal keeps what was stored', async () => {
        const before = provider.seen.length;
        const refused = await importKey('imported-accepted', 'a-key-fakehub-never-issued');
        expectError(refused, 400, 'connection_validation_failed');
        expect(keysChecked(before)).toEqual(['a-key-fakehub-never-issued']);
        expect(await storedKey('imported-accepted')).toBe(API_KEY);

        const replaced = await importKey('imported-accepted', API_KEY);
        expect(replaced.status).toBe(201);
        await receiver.waitFor(2, HOOKS);
        // The accepted override is announced; the refused one before it is not (its caller got the 400).
        expect(await importHooks()).toEqual([
          { connectionId: 'imported-accepted', operation: 'creation', success: true },
          { connectionId: 'imported-accepted', operation: 'override', success: true },
        ]);
      });

      it('refuses an import while no verdict can be had (orchestrator down), storing nothing', async () => {
        await stack.stopService('sync-orchestrator');
        try {
          const refused = await importKey('imported-unchecked', API_KEY);
          expectError(refused, 503, 'service_unavailable');
          expect(await listedIds('imported-unchecked')).toEqual([]);
        } finally {
          await stack.startReplica('sync-orchestrator');
        }
        // Once it is back, the same import goes through.
        expect((await importKey('imported-unchecked', API_KEY)).status).toBe(201);
      });
    });

    it('runs post-connection-creation after a connection is authorised through a connect session', async () => {
      const before = provider.seen.length;
      const connected = await connectWithKey('on-event-user', API_KEY);
      if (connected.status !== 200) throw new Error(connected.text);
      const { connectionId } = connected.body as { connectionId: string };
      // validate-connection accepted it first, having seen the key belongs to the configured account.
      const checks = provider.seen.slice(before).filter((c) => c.url === '/v2/account');
      expect(checks.map((c) => c.headers['x-api-key'])).toEqual([API_KEY]);
      const started = Date.now();
      for (;;) {
        const connection = (await nango.getConnection('fakehub', connectionId)) as {
          metadata: Record<string, unknown> | null;
        };
        if (connection.metadata?.onboarded === true) break;
        if (Date.now() - started > 60_000) throw new Error('the post-connection-creation script never ran');
        await new Promise((r) => setTimeout(r, 200));
      }
    });

    it('runs pre-connection-deletion while the connection still exists, then deletes it', async () => {
      const before = provider.seen.length;
      await nango.deleteConnection('fakehub', CONNECTION);
      const farewell = provider.seen.slice(before).filter((c) => c.url.startsWith('/v2/farewell'));
      // The script called the provider with the connection's credentials, before they were deleted.
      expect(farewell).toHaveLength(1);
      expect(farewell[0]!.headers['x-api-key']).toBe(API_KEY);
      expect(await failure(nango.getConnection('fakehub', CONNECTION))).toMatchObject({ status: 404 });
    });
  });

  describe('integration deletion', () => {
    it("deletes the integration's functions, even when the orchestrator was down at the time", async () => {
      expect((await nango.listFunctions({ uniqueKey: 'fakehub' })).pagination.total).toBeGreaterThan(0);
      // The orchestrator is down while the integration goes: the deletion must wait for it, not be lost.
      await stack.stopService('sync-orchestrator');
      expect((await api('DELETE', '/integrations/fakehub')).status).toBe(200);
      await stack.startReplica('sync-orchestrator');
      // A new integration with the same key starts with no functions of the old one.
      expect(
        (await api('POST', '/integrations', { provider: 'fake-api-key', unique_key: 'fakehub' })).status,
      ).toBe(200);
      const started = Date.now();
      for (;;) {
        const listed = await api('GET', '/integrations/fakehub/functions');
        if (
          listed.status === 200 &&
          (listed.body as { pagination: { total: number } }).pagination.total === 0
        )
          break;
        if (Date.now() - started > 60_000) throw new Error(`functions left behind: ${listed.text}`);
        await new Promise((r) => setTimeout(r, 250));
      }
      const config = await api('GET', '/scripts/config');
      expect(config.body).toEqual([]);
    });
  });
});
