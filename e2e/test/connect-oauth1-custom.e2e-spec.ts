import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { Nango } from '@nangohq/node';
import { startStack, type Stack } from '@switchboard/testing';
import { call, CookieJar } from './support/http';
import { oauth1CustomProvidersYaml, startFake, type Fake } from './support/oauth1-custom-fakes';
import { writeProvidersFile } from './support/providers-file';
import { CONNECT_SERVICES } from './support/connect-fakes/stack';

/**
 * The two redirect flows that need more than one provider call, through the real connect flow:
 * OAuth 1.0a three-legged (request token → authorize → access token) and GitHub App OAuth (CUSTOM: a user
 * token from the code of the flow's own user authorization (PKCE) plus an installation token from a signed
 * app JWT). The fake provider checks
 * every OAuth 1.0a signature itself from RFC 5849 §3.4 and every app JWT with the app's public key, so a
 * signing mistake on our side cannot be mirrored by the fake.
 */

describe('connect flows: OAuth 1.0a and GitHub App OAuth (CUSTOM)', () => {
  let stack: Stack;
  let nango: Nango;
  let fake: Fake;
  const run = randomUUID().slice(0, 8);
  const oauth1Integration = `oauth1-${run}`;
  const customIntegration = `ghapp-oauth-${run}`;
  const appKeys = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
  });

  const session = async (body: Record<string, unknown>) => {
    const res = await call(stack.gatewayUrl, 'POST', '/connect/sessions', { key: stack.secretKey, body });
    expect(res.status).toBe(201);
    return (res.body as { data: { token: string } }).data.token;
  };
  /** The end user's browser: it keeps the flow's nonce cookie from the start to the callback. */
  const browser = new CookieJar();
  const startFlow = async (integration: string, token: string) => {
    const res = await fetch(
      `${stack.gatewayUrl}/oauth/connect/${integration}?connect_session_token=${encodeURIComponent(token)}`,
      { redirect: 'manual' },
    );
    expect(res.status).toBe(302);
    browser.take(res);
    return new URL(res.headers.get('location')!);
  };
  /** The browser at the provider: it sends the browser straight back to us. */
  const atProvider = async (target: URL) => {
    const res = await fake.get(target);
    expect(res.status).toBe(302);
    return new URL(res.location!);
  };
  /** A GitHub App install back at our callback: the same browser is sent on to the user authorization. */
  const toUserAuthorization = async (setup: URL) => {
    const res = await fetch(setup, { headers: browser.headers(), redirect: 'manual' });
    expect(res.status).toBe(302);
    return new URL(res.headers.get('location')!);
  };
  const resultPage = async (callback: URL) => {
    const page = await fetch(callback, { headers: browser.headers() });
    return { status: page.status, html: await page.text() };
  };

  beforeAll(async () => {
    fake = await startFake();
    stack = await startStack({
      services: CONNECT_SERVICES,
      env: {
        SWITCHBOARD_PROVIDERS_FILE: writeProvidersFile(oauth1CustomProvidersYaml(fake.url)),
        NODE_EXTRA_CA_CERTS: fake.caFile,
      },
    });
    nango = new Nango({ secretKey: stack.secretKey, host: stack.gatewayUrl });
    fake.setGatewayCallback(`${stack.gatewayUrl}/oauth/callback`, appKeys.publicKey);
    await nango.createIntegration({
      provider: 'fake-oauth1',
      unique_key: oauth1Integration,
      credentials: { type: 'OAUTH1', client_id: fake.consumerKey, client_secret: fake.consumerSecret },
    });
    await nango.createIntegration({
      provider: 'fake-github-app-oauth',
      unique_key: customIntegration,
      credentials: {
        type: 'CUSTOM',
        client_id: fake.clientId,
        client_secret: fake.clientSecret,
        app_id: fake.appId,
        app_link: `${fake.url}/gh/apps/oauth-app`,
        private_key: appKeys.privateKey,
      },
    } as Parameters<Nango['createIntegration']>[0]);
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    await fake?.stop();
  });

  describe('OAuth 1.0a', () => {
    it('gets a signed request token, sends the user to authorize, trades the verifier for signed access tokens', async () => {
      const userId = `o1-user-${run}`;
      const token = await session({ end_user: { id: userId }, allowed_integrations: [oauth1Integration] });
      const authorize = await startFlow(oauth1Integration, token);
      expect(authorize.origin + authorize.pathname).toBe(`${fake.url}/o1/authorize`);
      expect(fake.oauth1Calls).toEqual([
        { path: '/o1/request_token', signature: 'valid', outcome: 'issued' },
      ]);
      const oauthCallback = new URL(fake.oauth1Callbacks.at(-1)!);
      expect(oauthCallback.origin + oauthCallback.pathname).toBe(`${stack.gatewayUrl}/oauth/callback`);
      expect(oauthCallback.searchParams.get('state')).toMatch(/^[0-9a-f-]{36}$/);

      const callback = await atProvider(authorize);
      expect(callback.origin + callback.pathname).toBe(`${stack.gatewayUrl}/oauth/callback`);
      expect(callback.searchParams.get('oauth_token')).toBe(authorize.searchParams.get('oauth_token'));
      const page = await resultPage(callback);
      expect(page.status).toBe(200);
      expect(page.html).toContain('nango_oauth_callback_success');
      expect(fake.oauth1Calls).toEqual([
        { path: '/o1/request_token', signature: 'valid', outcome: 'issued' },
        { path: '/o1/access_token', signature: 'valid', outcome: 'issued' },
      ]);

      const connectionId = /"connectionId":"([^"]+)"/.exec(page.html)![1]!;
      const connection = await nango.getConnection(oauth1Integration, connectionId);
      const issued = fake.oauth1AccessTokens.at(-1)!;
      expect(connection.credentials).toMatchObject({
        type: 'OAUTH1',
        oauth_token: issued.token,
        oauth_token_secret: issued.secret,
      });
      expect(connection.end_user).toMatchObject({ id: userId });
      // The secrets of the flow never reach the result page.
      expect(page.html).not.toContain(issued.secret);
      expect(page.html).not.toContain(fake.consumerSecret);
    });

    it('a forged verifier ends on an error page, and no connection is stored', async () => {
      const userId = `o1-forged-${run}`;
      const before = fake.oauth1Calls.length;
      const token = await session({ end_user: { id: userId }, allowed_integrations: [oauth1Integration] });
      const callback = await atProvider(await startFlow(oauth1Integration, token));
      const genuine = new URL(callback);
      const forged = `v-${randomBytes(8).toString('hex')}`;
      callback.searchParams.set('oauth_verifier', forged);
      const page = await resultPage(callback);
      expect(page.html).toContain('nango_oauth_callback_error');
      expect(page.html).not.toContain('nango_oauth_callback_success');
      expect(page.html).not.toContain(forged);
      // Our access-token call was signed correctly; the provider refused it for the verifier alone.
      expect(fake.oauth1Calls.slice(before)).toEqual([
        { path: '/o1/request_token', signature: 'valid', outcome: 'issued' },
        { path: '/o1/access_token', signature: 'valid', outcome: 'verifier_invalid' },
      ]);
      expect((await nango.listConnections({ userId })).connections).toEqual([]);

      // The failed attempt consumed the state: the genuine verifier cannot be played on it afterwards.
      const replay = await resultPage(genuine);
      expect(replay.html).toContain('nango_oauth_callback_error');
      expect((await nango.listConnections({ userId })).connections).toEqual([]);
    });
  });

  describe('GitHub App OAuth (CUSTOM)', () => {
    it("installs, then asks for the flow's own user authorization (PKCE): stores that user token and an installation token from a signed app JWT", async () => {
      const userId = `gh-user-${run}`;
      const token = await session({ end_user: { id: userId }, allowed_integrations: [customIntegration] });
      const install = await startFlow(customIntegration, token);
      expect(install.origin + install.pathname).toBe(`${fake.url}/gh/apps/oauth-app/installations/new`);
      expect(install.searchParams.get('state')).toMatch(/^[0-9a-f-]{36}$/);

      const setup = await atProvider(install);
      expect(setup.origin + setup.pathname).toBe(`${stack.gatewayUrl}/oauth/callback`);
      expect(setup.searchParams.get('code')).toMatch(/^ghcode-/);
      const authorize = await toUserAuthorization(setup);
      expect(authorize.origin + authorize.pathname).toBe(`${fake.url}/gh/login/oauth/authorize`);
      expect(authorize.searchParams.get('state')).toBe(install.searchParams.get('state'));
      expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
      // The install redirect's own code was spent (its token dropped), never used for the connection.
      expect(fake.userTokens).toHaveLength(1);
      const spentToken = fake.userTokens[0]!;

      const page = await resultPage(await atProvider(authorize));
      expect(fake.rejected).toEqual([]);
      expect(page.status).toBe(200);
      expect(page.html).toContain('nango_oauth_callback_success');
      expect(fake.userTokens).toHaveLength(2);
      expect(fake.installationTokens).toHaveLength(1);

      const connectionId = /"connectionId":"([^"]+)"/.exec(page.html)![1]!;
      const connection = await nango.getConnection(customIntegration, connectionId);
      expect(connection.credentials).toMatchObject({
        type: 'CUSTOM',
        app: { access_token: fake.installationTokens[0] },
        user: { access_token: fake.userTokens[1] },
      });
      // As with OAuth 2, the user's refresh token is shown only when asked for.
      expect((connection.credentials as { user: Record<string, unknown> }).user).not.toHaveProperty(
        'refresh_token',
      );
      const withRefresh = await nango.getConnection(customIntegration, connectionId, false, true);
      expect(withRefresh.credentials).toMatchObject({
        user: { access_token: fake.userTokens[1], refresh_token: expect.stringMatching(/^ghr_/) },
      });
      expect(connection.connection_config).toMatchObject({
        installation_id: fake.installationId,
        appPublicLink: `${fake.url}/gh/apps/oauth-app`,
      });
      expect(connection.end_user).toMatchObject({ id: userId });
      expect(JSON.stringify(withRefresh.credentials)).not.toContain(spentToken);
      expect(page.html).not.toContain(fake.userTokens[1]!);
      expect(page.html).not.toContain(fake.installationTokens[0]!);
    });

    it('a user authorization that comes back without a code ends on an error page, nothing stored', async () => {
      const userId = `gh-nocode-${run}`;
      const token = await session({ end_user: { id: userId }, allowed_integrations: [customIntegration] });
      const setup = await atProvider(await startFlow(customIntegration, token));
      const callback = await atProvider(await toUserAuthorization(setup));
      callback.searchParams.delete('code');
      const issuedBefore = fake.installationTokens.length;
      const page = await resultPage(callback);
      expect(page.html).toContain('nango_oauth_callback_error');
      expect(fake.installationTokens).toHaveLength(issuedBefore);
      expect((await nango.listConnections({ userId })).connections).toEqual([]);
    });
  });
});
