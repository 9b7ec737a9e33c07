import { randomUUID } from 'node:crypto';
import { Nango } from '@nangohq/node';
import type { Stack } from '@switchboard/testing';
import { connect, type NatsConnection } from 'nats';
import { Client } from 'pg';
import { waitForAuthEvents } from './support/auth-events';
import {
  appKeyPair,
  startConnectFakeProvider,
  startConnectStack,
  type ConnectFakeProvider,
} from './support/connect-fakes';
import {
  callbackConnectionId,
  connectIntegrationKeys,
  createConnectIntegrations,
  expectedAuthorizeQuery,
  expectInvalidSessionBody,
  expectNotLogged,
  expectUnauthorized,
  importKeyConnection,
  installApp,
  invalidBodyFailure,
  invalidSessionBodies,
  oauthBrowser,
  startConnect,
  tokenHash,
  TOKEN,
  unknownIntegrationsSession,
  UUID_V4,
  viewerSession,
} from './support/connect-flows';
import {
  call,
  CookieJar,
  createConnectSession,
  createKey,
  expectError,
  failure,
  withSessionToken,
} from './support/http';

/**
 * Connect sessions and the auth flows behind them, through the gateway: the official `@nangohq/node`
 * client for what it can do (sessions, reconnect sessions, reading the connection, waitForConnection),
 * raw HTTP for the browser-side routes and every error. Providers are a fake on loopback.
 */

describe('connect sessions and auth flows', () => {
  let stack: Stack;
  let nango: Nango;
  let db: Client;
  let nc: NatsConnection;
  let fake: ConnectFakeProvider;
  let connectUrl: string;
  const startedAt = new Date(Date.now() - 1000);
  const run = randomUUID().slice(0, 8);
  const integrations = connectIntegrationKeys(run);
  const { keyIntegration, oauthIntegration, basicIntegration, otherIntegration } = integrations;
  const { ccIntegration, tbaIntegration, appIntegration } = integrations;
  const appKeys = appKeyPair();

  const session = (body: Record<string, unknown>) =>
    createConnectSession(stack.gatewayUrl, stack.secretKey, body);
  const flow = (method: string, path: string, token: string, body?: unknown) =>
    call(stack.gatewayUrl, method, withSessionToken(path, token), { body });

  beforeAll(async () => {
    fake = await startConnectFakeProvider();
    ({ stack, connectUrl } = await startConnectStack(fake));
    nango = new Nango({ secretKey: stack.secretKey, host: stack.gatewayUrl });
    db = new Client({ connectionString: stack.databaseUrl });
    await db.connect();
    nc = await connect({ servers: stack.natsUrl });
    await createConnectIntegrations(nango, stack, fake, integrations, appKeys);
  }, 120_000);

  afterAll(async () => {
    await nc?.close();
    await db?.end();
    await stack?.stop();
    await fake?.stop();
  });

  describe('POST /connect/sessions', () => {
    it('answers 201 with a 30-minute token and a connect link, and stores only the token hash', async () => {
      const before = Date.now();
      const { data } = await nango.createConnectSession({
        end_user: { id: `user-${run}`, email: 'ada@example.com', display_name: 'Ada' },
        allowed_integrations: [keyIntegration],
      });
      expect(data.token).toMatch(TOKEN);
      expect(data.connect_link).toBe(`${connectUrl}/?session_token=${data.token}`);
      const expires = new Date(data.expires_at).getTime();
      expect(expires).toBeGreaterThanOrEqual(before + 30 * 60_000 - 1000);
      expect(expires).toBeLessThanOrEqual(Date.now() + 30 * 60_000 + 1000);

      const rows = await db.query('SELECT * FROM auth.connect_sessions WHERE token_hash = $1', [
        tokenHash(data.token),
      ]);
      expect(rows.rowCount).toBe(1);
      expect(JSON.stringify(rows.rows)).not.toContain(data.token);
      expect(JSON.stringify(rows.rows)).not.toContain(data.token.slice('nango_connect_session_'.length));
    });

    it('refuses integrations that do not exist, naming each path', async () => {
      const res = await call(stack.gatewayUrl, 'POST', '/connect/sessions', {
        key: stack.secretKey,
        body: unknownIntegrationsSession(keyIntegration),
      });
      const error = expectError(res, 400, 'invalid_body');
      expect(error.errors?.map((e) => e.path)).toEqual([
        ['allowed_integrations', 1],
        ['integrations_config_defaults', 'nope-2'],
        ['overrides', 'nope-3'],
      ]);
    });

    it('checks tags, the end user, the webhook URL override and docs links', async () => {
      for (const [body, path] of invalidSessionBodies(keyIntegration)) {
        await expectInvalidSessionBody(stack, body, path);
      }
    });

    it('needs the connect_sessions:write scope', async () => {
      const readOnly = await createKey(stack.gatewayUrl, stack.secretKey, ['environment:integrations:read']);
      const res = await call(stack.gatewayUrl, 'POST', '/connect/sessions', {
        key: readOnly,
        body: { tags: { a: 'b' } },
      });
      expect(expectError(res, 403, 'forbidden').message).toContain('environment:connect_sessions:write');
    });
  });

  describe('the session token as a bearer', () => {
    it('GET /connect/session shows the end user, allowed integrations, defaults (without a preset client secret) and overrides', async () => {
      const viewer = viewerSession(run, keyIntegration, oauthIntegration);
      const token = await session(viewer.body);
      const res = await call(stack.gatewayUrl, 'GET', '/connect/session', {
        key: token,
        headers: { 'content-type': 'application/json' },
      });
      expect(res.status).toBe(200);
      expect(res.text).not.toContain('PRESET-SECRET');
      expect(res.body).toEqual(viewer.expected);
    });

    it('lists only the allowed integrations, and reads providers', async () => {
      const token = await session({
        tags: { end_user_id: 'lister' },
        allowed_integrations: [keyIntegration],
      });
      const list = await call(stack.gatewayUrl, 'GET', '/integrations', { key: token });
      expect(list.status).toBe(200);
      expect((list.body as { data: { unique_key: string }[] }).data.map((i) => i.unique_key)).toEqual([
        keyIntegration,
      ]);
      const provider = await call(stack.gatewayUrl, 'GET', '/providers/fake-key', { key: token });
      expect(provider.body).toMatchObject({
        data: {
          name: 'fake-key',
          auth_mode: 'API_KEY',
          logo_url: expect.stringContaining('/images/template-logos/fake-key.svg'),
        },
      });
      expect((await call(stack.gatewayUrl, 'GET', '/providers?search=fake', { key: token })).status).toBe(
        200,
      );

      const all = await call(stack.gatewayUrl, 'GET', '/integrations', { key: stack.secretKey });
      expect((all.body as { data: unknown[] }).data.length).toBeGreaterThanOrEqual(4);
      // Everything else stays closed to a session token.
      expectError(
        await call(stack.gatewayUrl, 'POST', '/integrations', {
          key: token,
          body: { provider: 'fake-key', unique_key: 'x' },
        }),
        401,
        'invalid_secret_key_format',
      );
      expectError(
        await call(stack.gatewayUrl, 'GET', `/integrations/${keyIntegration}`, { key: token }),
        401,
        'invalid_secret_key_format',
      );
    });

    it('answers 401 for a malformed, unknown, expired or deleted token, and for a secret key on session routes', async () => {
      const badFormat = 'invalid_connect_session_token_format';
      const unknownToken = 'unknown_connect_session_token';
      await expectUnauthorized(stack.gatewayUrl, '/connect/session', 'nango_connect_session_abc', badFormat);
      await expectUnauthorized(stack.gatewayUrl, '/connect/session', stack.secretKey, badFormat);
      await expectUnauthorized(stack.gatewayUrl, '/connect/session', undefined, 'missing_auth_header');
      const unknown = `nango_connect_session_${'a'.repeat(64)}`;
      await expectUnauthorized(stack.gatewayUrl, '/connect/session', unknown, unknownToken);
      await expectUnauthorized(stack.gatewayUrl, '/integrations', unknown, unknownToken);

      const expiring = await session({ tags: { end_user_id: 'expiring' } });
      await db.query(
        `UPDATE auth.connect_sessions SET expires_at = now() - interval '1 second' WHERE token_hash = $1`,
        [tokenHash(expiring)],
      );
      await expectUnauthorized(stack.gatewayUrl, '/connect/session', expiring, unknownToken);

      const deleted = await session({ tags: { end_user_id: 'deleted' } });
      const del = await call(stack.gatewayUrl, 'DELETE', '/connect/session', { key: deleted });
      expect(del.status).toBe(204);
      await expectUnauthorized(stack.gatewayUrl, '/connect/session', deleted, unknownToken);
      expectError(
        await flow('POST', `/api-auth/api-key/${keyIntegration}`, deleted, { apiKey: fake.goodApiKey }),
        401,
        unknownToken,
      );
    });
  });

  describe('API key and basic flows', () => {
    it('refuses a wrong key at connect time, stores nothing, then connects with the right one (UUID v4 id, session tags)', async () => {
      const userId = `key-user-${run}`;
      const token = await session({
        end_user: { id: userId, email: 'key@example.com' },
        tags: { Team: 'core' },
        allowed_integrations: [keyIntegration],
      });
      const wrongKey = `wrong-${randomUUID()}`;
      const wrong = await flow('POST', `/api-auth/api-key/${keyIntegration}`, token, { apiKey: wrongKey });
      expect(expectError(wrong, 400, 'connection_test_failed').message).toContain('HTTP 401');
      expect(wrong.text).not.toContain(wrongKey);
      expect(fake.verificationKeys).toContain(wrongKey);
      expect((await nango.listConnections({ userId })).connections).toEqual([]);

      const ok = await flow('POST', `/api-auth/api-key/${keyIntegration}`, token, {
        apiKey: fake.goodApiKey,
      });
      expect(ok.status).toBe(200);
      const result = ok.body as { connectionId: string; providerConfigKey: string };
      expect(result).toEqual({
        connectionId: expect.stringMatching(UUID_V4),
        providerConfigKey: keyIntegration,
      });

      const connection = await nango.getConnection(keyIntegration, result.connectionId);
      expect(connection.credentials).toEqual({ type: 'API_KEY', apiKey: fake.goodApiKey });
      expect(connection.tags).toEqual({
        end_user_id: userId,
        end_user_email: 'key@example.com',
        team: 'core',
      });
      expect(connection.end_user).toMatchObject({ id: userId, email: 'key@example.com' });

      const events = await waitForAuthEvents(nc, startedAt, (all) =>
        all.some((e) => e.connectionId === result.connectionId),
      );
      expect(events.filter((e) => e.connectionId === result.connectionId)).toEqual([
        expect.objectContaining({
          operation: 'creation',
          success: true,
          providerConfigKey: keyIntegration,
          tags: connection.tags,
        }),
      ]);

      // What the end user typed never reaches a log.
      expectNotLogged(stack, [fake.goodApiKey, wrongKey]);
    });

    it("lets waitForConnection find the end user's new connection", async () => {
      const userId = `waiting-${run}`;
      const token = await session({ end_user: { id: userId }, allowed_integrations: [keyIntegration] });
      const waiting = nango.waitForConnection(keyIntegration, userId);
      const ok = await flow('POST', `/api-auth/api-key/${keyIntegration}`, token, {
        apiKey: fake.goodApiKey,
      });
      expect(ok.status).toBe(200);
      const found = await waiting;
      expect(found).toMatchObject({
        connection_id: (ok.body as { connectionId: string }).connectionId,
        provider_config_key: keyIntegration,
      });
    }, 40_000);

    it('connects a basic-auth provider without a verification endpoint', async () => {
      const token = await session({ tags: { end_user_id: 'basic' } });
      const ok = await flow('POST', `/api-auth/basic/${basicIntegration}`, token, {
        username: 'ada',
        password: 'pw-123',
      });
      expect(ok.status).toBe(200);
      const { connectionId } = ok.body as { connectionId: string };
      expect((await nango.getConnection(basicIntegration, connectionId)).credentials).toEqual({
        type: 'BASIC',
        username: 'ada',
        password: 'pw-123',
      });
    });

    it('answers the documented errors for the wrong route, integration or query', async () => {
      const token = await session({
        tags: { end_user_id: 'errors' },
        allowed_integrations: [keyIntegration, basicIntegration],
      });
      expectError(
        await flow('POST', `/api-auth/basic/${keyIntegration}`, token, { username: 'a', password: 'b' }),
        400,
        'invalid_auth_mode',
      );
      expectError(
        await flow('POST', `/api-auth/api-key/${otherIntegration}`, token, { apiKey: 'x' }),
        400,
        'integration_not_allowed',
      );
      const unrestricted = await session({ tags: { end_user_id: 'errors' } });
      expectError(
        await flow('POST', '/api-auth/api-key/no-such-integration', unrestricted, { apiKey: 'x' }),
        404,
        'unknown_provider_config',
      );
      const withId = await flow('POST', `/api-auth/api-key/${keyIntegration}?connection_id=mine`, token, {
        apiKey: 'x',
      });
      expect(expectError(withId, 400, 'invalid_query_params').message).toContain(
        'connection_id is forbidden',
      );
      expectError(
        await flow('POST', `/api-auth/api-key/${keyIntegration}`, token, { apiKey: '' }),
        400,
        'invalid_body',
      );
      expectError(
        await call(stack.gatewayUrl, 'POST', `/api-auth/api-key/${keyIntegration}`, {
          body: { apiKey: 'x' },
        }),
        401,
        'invalid_connect_session_token_format',
      );
      expectError(
        await flow('POST', `/api-auth/api-key/${keyIntegration}`, 'bad-token', { apiKey: 'x' }),
        401,
        'invalid_connect_session_token_format',
      );
    });
  });

  /** The end user's browser: it keeps the flow's nonce cookie from the start to the callback. */
  const browser = new CookieJar();

  describe('OAuth 2 authorization code', () => {
    const { startFlow, approve } = oauthBrowser(
      () => stack,
      () => fake,
      browser,
      oauthIntegration,
    );

    it('sends PKCE S256, a state, the scopes with the provider separator and its params; the callback stores the tokens', async () => {
      const userId = `oauth-user-${run}`;
      const token = await session({
        end_user: { id: userId },
        allowed_integrations: [oauthIntegration],
        webhook_url_override: 'https://hooks.example.com/switchboard',
      });
      const authorizeUrl = await startFlow(token);
      expect(authorizeUrl.origin + authorizeUrl.pathname).toBe(`${fake.url}/acme/authorize`);
      const q = authorizeUrl.searchParams;
      expect(Object.fromEntries(q)).toEqual(expectedAuthorizeQuery(fake, stack.gatewayUrl));
      expect(authorizeUrl.toString()).not.toContain(fake.clientSecret);

      const callbackUrl = await approve(authorizeUrl);
      expect(callbackUrl.origin + callbackUrl.pathname).toBe(`${stack.gatewayUrl}/oauth/callback`);
      const page = await fetch(callbackUrl, { headers: browser.headers() });
      const html = await page.text();
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(html).toContain('nango_oauth_callback_success');
      expect(fake.tokenRequests.at(-1)).toMatchObject({ outcome: 'issued' });
      expect(fake.tokenRequests.at(-1)!.params.get('code_verifier')).toMatch(/^[A-Za-z0-9_-]{43}$/);

      const connectionId = callbackConnectionId(html);
      expect(connectionId).toMatch(UUID_V4);
      const connection = await nango.getConnection(oauthIntegration, connectionId!);
      expect(connection.credentials).toMatchObject({
        type: 'OAUTH2',
        access_token: fake.accessTokens.at(-1),
      });
      expect(connection.connection_config).toMatchObject({ tenant: 'acme', team: 'acme' });
      expect(connection.webhook_url_override).toBe('https://hooks.example.com/switchboard');

      // The state is single-use: replaying the callback changes nothing and says why.
      const replay = await fetch(callbackUrl, { headers: browser.headers() });
      expect(replay.status).toBe(400);
      expect(await replay.text()).toContain('state_err');
      expect(fake.tokenRequests.length).toBe(1);
    });

    it('reports a provider refusal and a missing connection config field', async () => {
      const token = await session({
        tags: { end_user_id: 'refused' },
        allowed_integrations: [oauthIntegration],
      });
      const authorizeUrl = await startFlow(token);
      const denied = await fetch(
        `${stack.gatewayUrl}/oauth/callback?state=${authorizeUrl.searchParams.get('state')}&error=access_denied&error_description=User+said+no`,
        { headers: browser.headers() },
      );
      expect(denied.status).toBe(400);
      const html = await denied.text();
      expect(html).toContain('nango_oauth_callback_error');
      expect(html).toContain('access_denied');

      const missing = await startConnect(stack.gatewayUrl, oauthIntegration, token);
      expect(missing.status).toBe(400);
      expect(await missing.text()).toContain('Tenant is required');
      const hostile = await startConnect(
        stack.gatewayUrl,
        oauthIntegration,
        token,
        '&params%5Btenant%5D=evil.example%2Fx',
      );
      expect(hostile.status).toBe(400);

      const secretInUrl = await startConnect(
        stack.gatewayUrl,
        oauthIntegration,
        token,
        '&params%5Btenant%5D=acme&credentials%5Boauth_client_secret_override%5D=s3cret',
      );
      expect(secretInUrl.status).toBe(400);
    });

    it("uses the end user's own OAuth app when the session asks for one, sent in a POST body", async () => {
      const token = await session({
        tags: { end_user_id: 'own-app' },
        allowed_integrations: [oauthIntegration],
        integrations_config_defaults: {
          [oauthIntegration]: {
            connection_config: { oauth_client_id_override: '', oauth_client_secret_override: '' },
          },
        },
      });
      const missing = await flow('POST', `/oauth/connect/${oauthIntegration}`, token, {
        params: { tenant: 'acme' },
      });
      expect(expectError(missing, 400, 'invalid_connection').errors?.map((e) => e.path)).toEqual([
        ['credentials', 'oauth_client_id_override'],
        ['credentials', 'oauth_client_secret_override'],
      ]);
      // The fake knows one client; the end user's "own app" is that same client here, typed on the page.
      const started = await flow('POST', `/oauth/connect/${oauthIntegration}`, token, {
        params: { tenant: 'acme' },
        credentials: {
          oauth_client_id_override: fake.clientId,
          oauth_client_secret_override: fake.clientSecret,
        },
      });
      expect(started.status).toBe(200);
      // The page opens the gateway's launch URL in its popup: that binds the flow to this browser.
      const launchUrl = (started.body as { url: string }).url;
      expect(launchUrl).toMatch(new RegExp(`^${stack.gatewayUrl}/oauth/launch/[0-9a-f-]{36}$`));
      const launch = await fetch(launchUrl, { redirect: 'manual' });
      expect(launch.status).toBe(302);
      browser.take(launch);
      const authorizeUrl = new URL(launch.headers.get('location')!);
      expect(authorizeUrl.searchParams.get('client_id')).toBe(fake.clientId);
      const page = await fetch(await approve(authorizeUrl), { headers: browser.headers() });
      const html = await page.text();
      expect(page.status).toBe(200);
      const connectionId = callbackConnectionId(html)!;
      const connection = await nango.getConnection(oauthIntegration, connectionId);
      expect(connection.credentials).toMatchObject({
        type: 'OAUTH2',
        config_override: { client_id: fake.clientId, client_secret: fake.clientSecret },
      });
      expect(connection.connection_config).not.toHaveProperty('oauth_client_secret_override');
    });
  });

  describe('client credentials, TBA and app installation', () => {
    it('connects OAUTH2_CC with the client the end user typed, and refuses a wrong one', async () => {
      const token = await session({
        tags: { end_user_id: 'machine' },
        allowed_integrations: [ccIntegration],
      });
      const wrong = await flow('POST', `/oauth2/auth/${ccIntegration}`, token, {
        client_id: fake.clientId,
        client_secret: 'nope-nope',
      });
      expect(expectError(wrong, 400, 'invalid_credentials').message).toContain('invalid_client');
      expect(wrong.text).not.toContain('nope-nope');
      const ok = await flow('POST', `/oauth2/auth/${ccIntegration}`, token, {
        client_id: fake.clientId,
        client_secret: fake.clientSecret,
      });
      expect(ok.status).toBe(200);
      const { connectionId } = ok.body as { connectionId: string };
      const connection = await nango.getConnection(ccIntegration, connectionId);
      expect(connection.credentials).toMatchObject({
        type: 'OAUTH2_CC',
        token: fake.clientCredentialTokens.at(-1),
        client_id: fake.clientId,
      });
    });

    it('stores TBA tokens with the account id asked on the page', async () => {
      const token = await session({
        tags: { end_user_id: 'netsuite' },
        allowed_integrations: [tbaIntegration],
      });
      const missing = await flow('POST', `/auth/tba/${tbaIntegration}`, token, {
        token_id: 'tid',
        token_secret: 'tsecret',
      });
      expect(expectError(missing, 400, 'invalid_connection').errors?.map((e) => e.path)).toContainEqual([
        'params',
        'accountId',
      ]);
      const ok = await flow('POST', `/auth/tba/${tbaIntegration}?params%5BaccountId%5D=1234567`, token, {
        token_id: 'tid',
        token_secret: 'tsecret',
      });
      expect(ok.status).toBe(200);
      const connection = await nango.getConnection(
        tbaIntegration,
        (ok.body as { connectionId: string }).connectionId,
      );
      expect(connection.credentials).toEqual({ type: 'TBA', token_id: 'tid', token_secret: 'tsecret' });
      expect(connection.connection_config).toMatchObject({ accountId: '1234567' });
    });

    it('installs an app: the install page, the setup URL callback, the user authorization, an installation token from a signed app JWT', async () => {
      const token = await session({
        end_user: { id: `app-user-${run}` },
        allowed_integrations: [appIntegration],
      });
      const html = await installApp(stack, fake, browser, appIntegration, token);
      const connectionId = callbackConnectionId(html)!;
      const connection = await nango.getConnection(appIntegration, connectionId);
      expect(connection.credentials).toMatchObject({
        type: 'APP',
        access_token: fake.installationTokens.at(-1),
      });
      expect(fake.installationChecks).toBeGreaterThan(0);
      expect(connection.connection_config).toMatchObject({
        installation_id: '4242',
        appPublicLink: `${fake.url}/apps/test-app`,
      });
    });
  });

  describe('reconnect sessions', () => {
    it('re-authorizes a session-created connection in place (override), and refuses others', async () => {
      const userId = `reconnect-${run}`;
      const first = await session({
        end_user: { id: userId },
        tags: { stage: 'one' },
        allowed_integrations: [keyIntegration],
      });
      const created = await flow('POST', `/api-auth/api-key/${keyIntegration}`, first, {
        apiKey: fake.goodApiKey,
      });
      const { connectionId } = created.body as { connectionId: string };

      const { data } = await nango.createReconnectSession({
        connection_id: connectionId,
        integration_id: keyIntegration,
        tags: { stage: 'two' },
      });
      expect(data.token).toMatch(TOKEN);
      const view = await call(stack.gatewayUrl, 'GET', '/connect/session', { key: data.token });
      expect(view.body).toMatchObject({
        data: { isReconnecting: true, allowed_integrations: [keyIntegration], endUser: { id: userId } },
      });

      const again = await flow('POST', `/api-auth/api-key/${keyIntegration}`, data.token, {
        apiKey: fake.goodApiKey,
      });
      expect(again.body).toEqual({ connectionId, providerConfigKey: keyIntegration });
      const connection = await nango.getConnection(keyIntegration, connectionId);
      expect(connection.tags).toEqual({ stage: 'two' });
      const events = await waitForAuthEvents(nc, startedAt, (all) =>
        all.some((e) => e.connectionId === connectionId && e.operation === 'override'),
      );
      expect(events.filter((e) => e.connectionId === connectionId).map((e) => e.operation)).toEqual([
        'creation',
        'override',
      ]);

      const unknown = await failure(
        nango.createReconnectSession({ connection_id: 'no-such-connection', integration_id: keyIntegration }),
      );
      expect(unknown).toEqual(invalidBodyFailure());

      const imported = await importKeyConnection(stack, keyIntegration, `imported-${run}`);
      expect(imported.status).toBeLessThan(300);
      const notSession = await failure(
        nango.createReconnectSession({ connection_id: `imported-${run}`, integration_id: keyIntegration }),
      );
      expect(notSession).toEqual(invalidBodyFailure(expect.stringContaining('connect session')));
    });
  });
});
