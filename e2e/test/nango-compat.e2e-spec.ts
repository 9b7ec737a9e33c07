import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Nango } from '@nangohq/node';
import type { Stack } from '@switchboard/testing';
import { call, expectError, failure } from './support/http';
import { START_HOOK_TIMEOUT_MS } from './support/processes';
import { standardStack } from './support/standard-stack';

jest.setTimeout(180_000);

const INTEGRATION = 'mcphub';
const CONNECTION = 'conn-mcphub';

/** A zod-like input check the sandbox runs before `exec` (what `createAction({ input })` compiles to). */
const NAME_INPUT = `{
  safeParse: (v) =>
    v && typeof v.name === 'string'
      ? { success: true, data: v }
      : { success: false, error: { issues: [{ code: 'invalid_type', expected: 'string', path: ['name'], message: 'Expected string' }] } },
}`;

/** Compiled action bundles as the CLI sends them (CommonJS, a definition with `exec` as default export). */
const BUNDLES = {
  greet: `exports.default = { type: 'action', input: ${NAME_INPUT}, exec: async (nango, input) => ({ greeting: 'hello ' + input.name }) };`,
  explode: `exports.default = { type: 'action', exec: async (nango, input) => { throw new TypeError('boom: ' + (input && input.why)); } };`,
  ping: `exports.default = { type: 'action', exec: async () => 'pong' };`,
};

const GREET_SCHEMA = {
  definitions: {
    GreetInput: {
      type: 'object',
      properties: { name: { type: 'string', description: 'Who to greet' } },
      required: ['name'],
      additionalProperties: false,
    },
    GreetOutput: { type: 'object', properties: { greeting: { type: 'string' } }, required: ['greeting'] },
  },
};

function action(name: keyof typeof BUNDLES, extra: Record<string, unknown> = {}) {
  return {
    syncName: name,
    providerConfigKey: INTEGRATION,
    type: 'action',
    models: [],
    runs: null,
    fileBody: { js: BUNDLES[name], ts: `// ${name}` },
    ...extra,
  };
}

describe('Nango compatibility seen by the official tools, and /mcp', () => {
  let stack: Stack;
  let nango: Nango;

  const api = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
    call(stack.gatewayUrl, method, path, {
      key: stack.secretKey,
      ...(body !== undefined ? { body } : {}),
      ...(headers ? { headers } : {}),
    });
  const onConnection = { 'connection-id': CONNECTION, 'provider-config-key': INTEGRATION };

  beforeAll(async () => {
    stack = await standardStack();
    nango = new Nango({ secretKey: stack.secretKey, host: stack.gatewayUrl });
    expect(
      (await api('POST', '/integrations', { provider: 'fake-api-key', unique_key: INTEGRATION })).status,
    ).toBe(200);
    const imported = await api('POST', '/connections', {
      provider_config_key: INTEGRATION,
      connection_id: CONNECTION,
      credentials: { type: 'API_KEY', apiKey: 'mcp-key' },
      connection_config: { origin: 'http://127.0.0.1:9', account: 'acme' },
    });
    expect([200, 201]).toContain(imported.status);
    const deployed = await api('POST', '/sync/deploy', {
      flowConfigs: [
        action('greet', {
          input: 'GreetInput',
          models: ['GreetOutput'],
          models_json_schema: GREET_SCHEMA,
          metadata: { description: 'Greets someone by name' },
          version: '1.0.0',
        }),
        action('explode', { metadata: { description: 'Always throws a TypeError' } }),
        action('ping'),
      ],
      reconcile: false,
      deployMode: 'integration',
    });
    expect(deployed.status).toBe(200);
  }, START_HOOK_TIMEOUT_MS);

  afterAll(async () => {
    await stack?.stop();
  });

  describe('GET /scripts/config', () => {
    it('gives every action models (an array, [] without a schema), is_public and pre_built, as Nango lists them', async () => {
      const config = (await nango.getScriptsConfig()) as unknown as {
        providerConfigKey: string;
        actions: {
          name: string;
          models: { name: string; fields: unknown[] }[];
          is_public: boolean;
          pre_built: boolean;
        }[];
      }[];
      const mcphub = config.find((c) => c.providerConfigKey === INTEGRATION)!;
      // What a client does with it: this threw "Cannot read properties of undefined (reading 'map')".
      const modelNames = Object.fromEntries(mcphub.actions.map((a) => [a.name, a.models.map((m) => m.name)]));
      expect(modelNames).toEqual({ explode: [], greet: ['GreetInput', 'GreetOutput'], ping: [] });
      for (const a of mcphub.actions) {
        expect({ name: a.name, is_public: a.is_public, pre_built: a.pre_built }).toEqual({
          name: a.name,
          is_public: false,
          pre_built: false,
        });
      }
      expect(mcphub.actions.find((a) => a.name === 'greet')!.models[0]).toEqual({
        name: 'GreetInput',
        fields: [],
      });
    });
  });

  describe('action failures', () => {
    it("answers a thrown Error as Nango's runner does: 500 script_internal_error with {name, message}, and the run id", async () => {
      expect(await failure(nango.triggerAction(INTEGRATION, CONNECTION, 'explode', { why: 'x' }))).toEqual({
        status: 500,
        data: {
          error: {
            code: 'script_internal_error',
            message: expect.any(String),
            payload: { name: 'TypeError', message: 'boom: x' },
          },
        },
      });
      const res = await api('POST', '/action/trigger', { action_name: 'explode', input: {} }, onConnection);
      expect(res.status).toBe(500);
      const runId = res.headers.get('x-switchboard-run-id');
      expect(runId).toMatch(/^[0-9a-f-]{36}$/);
      const logs = await api('GET', `/functions/runs/${runId}/logs`);
      expect(logs.body).toMatchObject({ data: { id: runId, function: 'explode', status: 'failed' } });
    });

    it('answers an input its schema refuses with 400 invalid_action_input, the issues in payload, and the run id', async () => {
      expect(await failure(nango.triggerAction(INTEGRATION, CONNECTION, 'greet', { name: 7 }))).toEqual({
        status: 400,
        data: {
          error: {
            code: 'invalid_action_input',
            message: expect.any(String),
            payload: [expect.objectContaining({ path: ['name'], message: 'Expected string' })],
          },
        },
      });
      const res = await api('POST', '/action/trigger', { action_name: 'greet', input: {} }, onConnection);
      expect(res.status).toBe(400);
      expect(res.headers.get('x-switchboard-run-id')).toMatch(/^[0-9a-f-]{36}$/);
      // A request refused before anything ran has no run to name.
      const refused = await api(
        'POST',
        '/action/trigger',
        { action_name: 'nothing', input: {} },
        onConnection,
      );
      expect(refused.status).toBe(404);
      expect(refused.headers.get('x-switchboard-run-id')).toBeNull();
      expect(await nango.triggerAction(INTEGRATION, CONNECTION, 'greet', { name: 'Ada' })).toEqual({
        greeting: 'hello Ada',
      });
    });
  });

  describe('GET /records', () => {
    it('answers a malformed cursor with 400 invalid_cursor, not a server error (prune too)', async () => {
      for (const cursor of [
        'bm9wZQ',
        'not-base64-at-all!',
        Buffer.from('2020-01-01||x').toString('base64'),
      ]) {
        const res = await api(
          'GET',
          `/records?model=Contact&cursor=${encodeURIComponent(cursor)}`,
          undefined,
          onConnection,
        );
        expectError(res, 400, 'invalid_cursor');
      }
      expect(
        await failure(
          nango.listRecords({
            providerConfigKey: INTEGRATION,
            connectionId: CONNECTION,
            model: 'Contact',
            cursor: 'bm9wZQ',
          }),
        ),
      ).toMatchObject({ status: 400, data: { error: { code: 'invalid_cursor' } } });
      const prune = await api(
        'PATCH',
        '/records/prune',
        { model: 'Contact', until_cursor: 'bm9wZQ' },
        onConnection,
      );
      expectError(prune, 400, 'invalid_cursor');
    });
  });

  describe('a large project', () => {
    it('deploys ~35 integrations and ~1,700 functions (~35 MB) in one deploy; other routes keep their limit', async () => {
      const integrations = Array.from({ length: 35 }, (_, i) => `big-${String(i).padStart(2, '0')}`);
      for (const key of integrations) {
        expect(
          (await api('POST', '/integrations', { provider: 'fake-api-key', unique_key: key })).status,
        ).toBe(200);
      }
      // What the CLI sends for each function: a compiled bundle with its inline source map, and the source.
      const flowConfigs = integrations.flatMap((key) =>
        Array.from({ length: 49 }, (_, i) => ({
          syncName: `fn-${i}`,
          providerConfigKey: key,
          type: 'action',
          models: [`Out${i}`],
          runs: null,
          metadata: { description: `Function ${i} of ${key}` },
          models_json_schema: { definitions: { [`Out${i}`]: { type: 'object', properties: {} } } },
          fileBody: {
            js: `exports.default = { type: 'action', exec: async () => '${key}/${i}' };\n//# sourceMappingURL=data:application/json;base64,${'A'.repeat(14_000)}`,
            ts: `// ${key}/${i}\n${'/* source */\n'.repeat(450)}`,
          },
        })),
      );
      const body = JSON.stringify({
        flowConfigs,
        reconcile: false,
        deployMode: 'integration',
        sdkVersion: '0.71.10-zero',
      });
      expect(flowConfigs).toHaveLength(1715);
      expect(Buffer.byteLength(body)).toBeGreaterThan(35_000_000);

      const plan = await api('POST', '/sync/deploy/confirmation', body);
      expect(plan.status).toBe(200);
      expect((plan.body as { newActions: unknown[] }).newActions).toHaveLength(1715);
      const deployed = await api('POST', '/sync/deploy', body);
      expect(deployed.status).toBe(200);
      expect(deployed.body).toHaveLength(1715);

      const config = (await nango.getScriptsConfig()) as unknown as {
        providerConfigKey: string;
        actions: { name: string }[];
      }[];
      const big = config.filter((c) => c.providerConfigKey.startsWith('big-'));
      expect(big.map((c) => c.providerConfigKey).sort()).toEqual(integrations);
      expect(big.reduce((n, c) => n + c.actions.length, 0)).toBe(1715);
      // Each function is runnable as deployed.
      expect(await nango.getFunctionCode({ uniqueKey: 'big-34', name: 'fn-48' })).toMatchObject({
        type: 'action',
      });

      // The deploy routes' limit is theirs alone: a management route still refuses a body over its own.
      const large = await api('POST', '/integrations', {
        provider: 'fake-api-key',
        unique_key: 'too-large',
        display_name: 'x'.repeat(2 * 1024 * 1024),
      });
      expectError(large, 413, 'payload_too_large');
    });
  });

  describe('/mcp', () => {
    const connectMcp = async (headers: Record<string, string>) => {
      const client = new Client({ name: 'switchboard-e2e', version: '1.0.0' });
      const transport = new StreamableHTTPClientTransport(new URL(`${stack.gatewayUrl}/mcp`), {
        requestInit: { headers },
      });
      await client.connect(transport);
      return client;
    };
    const headersFor = (key: string, connectionId = CONNECTION) => ({
      authorization: `Bearer ${key}`,
      'connection-id': connectionId,
      'provider-config-key': INTEGRATION,
    });

    it("lists the integration's actions as tools with their input schema and description, and runs them", async () => {
      const client = await connectMcp(headersFor(stack.secretKey));
      try {
        const { tools } = await client.listTools();
        expect([...tools].sort((a, b) => a.name.localeCompare(b.name))).toEqual([
          expect.objectContaining({
            name: 'explode',
            description: 'Always throws a TypeError',
            inputSchema: { type: 'object' },
          }),
          expect.objectContaining({
            name: 'greet',
            description: 'Greets someone by name',
            inputSchema: {
              type: 'object',
              properties: { name: { type: 'string', description: 'Who to greet' } },
              required: ['name'],
            },
          }),
          expect.objectContaining({ name: 'ping', description: 'ping', inputSchema: { type: 'object' } }),
        ]);

        const greeted = await client.callTool({ name: 'greet', arguments: { name: 'Ada' } });
        expect(greeted.isError).toBeFalsy();
        expect(greeted.content).toEqual([{ type: 'text', text: expect.any(String) }]);
        expect(JSON.parse((greeted.content as { text: string }[])[0]!.text)).toEqual({
          greeting: 'hello Ada',
        });

        const exploded = await client.callTool({ name: 'explode', arguments: { why: 'mcp' } });
        expect(exploded.isError).toBe(true);
        const text = (exploded.content as { text: string }[])[0]!.text;
        expect(text).toContain('script_internal_error');
        expect(text).toContain('boom: mcp');

        const refused = await client.callTool({ name: 'greet', arguments: { name: 42 } });
        expect(refused.isError).toBe(true);
        expect((refused.content as { text: string }[])[0]!.text).toContain('invalid_action_input');

        await expect(client.callTool({ name: 'nothing', arguments: {} })).rejects.toThrow(
          /nothing not found/,
        );
      } finally {
        await client.close();
      }
    });

    it('refuses a wrong key with 401 and an unknown connection with 400 unknown_connection', async () => {
      // The SDK's StreamableHTTPError carries the HTTP status as its code.
      await expect(connectMcp(headersFor('4f4f4f4f-4f4f-4f4f-8f4f-4f4f4f4f4f4f'))).rejects.toMatchObject({
        code: 401,
        message: expect.stringContaining('unknown_account'),
      });
      await expect(connectMcp(headersFor(stack.secretKey, 'no-such-connection'))).rejects.toMatchObject({
        code: 400,
        message: expect.stringContaining('unknown_connection'),
      });
      const get = await call(stack.gatewayUrl, 'GET', '/mcp', {
        key: stack.secretKey,
        headers: onConnection,
      });
      expect(get.status).toBe(405);
      const missing = await api('POST', '/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list' });
      expectError(missing, 400, 'invalid_headers');
      const empty = await call(stack.gatewayUrl, 'POST', '/mcp', {
        key: stack.secretKey,
        headers: { ...onConnection, 'content-type': 'application/json' },
      });
      expect(empty.status).toBe(400);
      expect(empty.body).toMatchObject({ jsonrpc: '2.0', error: { code: -32700 } });
    });
  });
});
