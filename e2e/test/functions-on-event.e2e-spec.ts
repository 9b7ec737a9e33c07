import type { Nango } from '@nangohq/node';
import type { Stack } from '@switchboard/testing';
import { authWebhooksSettled } from './support/barriers';
import type { ItemsProvider } from './support/functions-fakes';
import { API_KEY, CONNECTION, FunctionsSuite, IMPORT_HOOKS } from './support/functions-suite';
import { call, expectError, failure } from './support/http';
import { START_HOOK_TIMEOUT_MS } from './support/processes';
import { standardStack } from './support/standard-stack';
import type { WebhookReceiver } from './support/webhook-receiver';

jest.setTimeout(180_000);

// The deployed on-event scripts at work: validate-connection on connect and on import, post-connection-creation
// and pre-connection-deletion. On the standard stack, in an account of its own.
describe('functions: deploy with the nango CLI, the functions API and actions', () => {
  const suite = new FunctionsSuite();
  const { api, importKey, listedIds } = suite;
  let stack: Stack;
  let provider: ItemsProvider;
  let receiver: WebhookReceiver;
  let nango: Nango;

  beforeAll(async () => {
    await suite.start(() => standardStack());
    ({ stack, provider, receiver, nango } = suite);
    await suite.deploy();
  }, 2 * START_HOOK_TIMEOUT_MS);

  afterAll(() => suite.stop());

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
