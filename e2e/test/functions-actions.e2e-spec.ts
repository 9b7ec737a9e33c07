import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Nango } from '@nangohq/node';
import type { Stack } from '@switchboard/testing';
import { authWebhooksSettled } from './support/barriers';
import { Webhook } from 'standardwebhooks';
import { ITEM_NAMES, type ItemsProvider } from './support/functions-fakes';
import { API_KEY, CONNECTION, FunctionsSuite, IMPORT_HOOKS } from './support/functions-suite';
import { call, expectError, failure } from './support/http';
import { START_HOOK_TIMEOUT_MS } from './support/processes';
import { standardStack } from './support/standard-stack';
import { headerRecord, type WebhookReceiver } from './support/webhook-receiver';

jest.setTimeout(180_000);

// Running the deployed functions: actions synchronously, asynchronously, retried, and across a redeploy of a
// new version; then the on-event scripts (validate-connection on connect and on import,
// post-connection-creation and pre-connection-deletion). On the standard stack, in an account of its own
// (one deploy of the project for both).
describe('functions: deploy with the nango CLI, the functions API and actions', () => {
  const suite = new FunctionsSuite();
  const { api, importKey, listedIds, trigger } = suite;
  let stack: Stack;
  let provider: ItemsProvider;
  let receiver: WebhookReceiver;
  let nango: Nango;
  let project: string;

  beforeAll(async () => {
    await suite.start(() => standardStack());
    ({ stack, provider, receiver, nango, project } = suite);
    await suite.deploy();
  }, 2 * START_HOOK_TIMEOUT_MS);

  afterAll(() => suite.stop());

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
      const res = await trigger('summarize-items', { owner: 'acme', pageSize: 5 });
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
      const res = await trigger(
        'summarize-items',
        { owner: 'acme' },
        { 'x-async': 'true', 'x-max-retries': '9' },
      );
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

      const accepted = await trigger(
        'summarize-items',
        { owner: 'acme' },
        { 'x-async': 'true', 'x-max-retries': '1' },
      );
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
      const accepted = await trigger(
        'refuse',
        { reason: 'again' },
        { 'x-async': 'true', 'x-max-retries': '2' },
      );
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
      const res = await trigger('big-echo', { waitMs: 0, blob });
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
      /** The keys the validate-connection script sent to fakehub's `/v2/account` since `before`. */
      const keysChecked = (before: number) =>
        provider.seen
          .slice(before)
          .filter((c) => c.url === '/v2/account')
          .map((c) => c.headers['x-api-key']);
      const storedKey = async (connectionId: string) =>
        ((await nango.getConnection('fakehub', connectionId)) as { credentials: { apiKey?: string } })
          .credentials.apiKey;
      /** The auth webhooks sent for imports, once every one the stack had cause to send is out. */
      const importHooks = async () => {
        await authWebhooksSettled(stack);
        return receiver.on(IMPORT_HOOKS).map((h) => {
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
        await receiver.waitFor(1, IMPORT_HOOKS);
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
        await receiver.waitFor(2, IMPORT_HOOKS);
        // The accepted override is announced; the refused one before it is not (its caller got the 400).
        expect(await importHooks()).toEqual([
          { connectionId: 'imported-accepted', operation: 'creation', success: true },
          { connectionId: 'imported-accepted', operation: 'override', success: true },
        ]);
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
});
