import { createHmac, generateKeyPairSync, randomUUID } from 'node:crypto';
import { Nango } from '@nangohq/node';
import { freePort, startStack, type Stack } from '@switchboard/testing';
import { Client } from 'pg';
import {
  startConnectFakeProvider,
  writeConnectProvidersFile,
  type ConnectFakeProvider,
} from './support/connect-fakes';
import { call, CookieJar, expectError } from './support/http';
import { WebhookReceiver } from './support/webhook-receiver';

/**
 * Attacks an end user holding a connect link can try through the public surface (gateway, connect page,
 * auth routes), each shown refused with nothing stored, sent or forwarded. The end user is not trusted:
 * every query parameter and body field below is what a hostile browser would send. Providers are fakes on
 * loopback; `attacker` is a second fake standing in for a server the end user controls.
 */
describe('connect flows refuse what a hostile end user sends', () => {
  let stack: Stack;
  let nango: Nango;
  let db: Client;
  let fake: ConnectFakeProvider;
  let attacker: ConnectFakeProvider;
  let receiver: WebhookReceiver;
  const ROUTED_WEBHOOK_SECRET = 'routed-webhook-secret';
  const run = randomUUID().slice(0, 8);
  const oauthIntegration = `oauth-${run}`;
  const hostedIntegration = `hosted-${run}`;
  const keyIntegration = `key-${run}`;
  const appIntegration = `app-${run}`;
  const routedIntegration = `routed-${run}`;
  const appKeys = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
  });

  const session = async (body: Record<string, unknown>) => {
    const res = await call(stack.gatewayUrl, 'POST', '/connect/sessions', { key: stack.secretKey, body });
    expect({ status: res.status, body: res.body }).toEqual({ status: 201, body: expect.anything() });
    return (res.body as { data: { token: string } }).data.token;
  };
  const withToken = (path: string, token: string) =>
    `${path}${path.includes('?') ? '&' : '?'}connect_session_token=${encodeURIComponent(token)}`;
  const connectionCount = async (providerConfigKey: string) =>
    Number(
      (
        await db.query('SELECT count(*)::int AS n FROM vault.connections WHERE provider_config_key = $1', [
          providerConfigKey,
        ])
      ).rows[0].n,
    );
  const attackerHost = () => attacker.url.replace(/^https:\/\//, '');

  beforeAll(async () => {
    fake = await startConnectFakeProvider();
    attacker = await startConnectFakeProvider();
    receiver = await new WebhookReceiver().start();
    const connectPort = await freePort();
    stack = await startStack({
      env: {
        SWITCHBOARD_PROVIDERS_FILE: writeConnectProvidersFile(fake.url),
        NODE_EXTRA_CA_CERTS: fake.caFile,
        SWITCHBOARD_CONNECT_URL: `http://127.0.0.1:${connectPort}`,
      },
      serviceEnv: {
        'auth-connect': { CONNECT_PORT: String(connectPort), CONNECT_HOST: '127.0.0.1' },
        'webhook-relay': {
          SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1',
          SWITCHBOARD_WEBHOOK_RETRY_SCHEDULE: '0,300ms,600ms',
          SWITCHBOARD_WEBHOOK_POLL_INTERVAL: '100ms',
        },
      },
    });
    nango = new Nango({ secretKey: stack.secretKey, host: stack.gatewayUrl });
    db = new Client({ connectionString: stack.databaseUrl });
    await db.connect();
    const oauthCredentials = {
      type: 'OAUTH2' as const,
      client_id: fake.clientId,
      client_secret: fake.clientSecret,
      scopes: 'read',
    };
    await nango.createIntegration({
      provider: 'fake-oauth',
      unique_key: oauthIntegration,
      credentials: oauthCredentials,
    });
    await nango.createIntegration({
      provider: 'fake-hosted',
      unique_key: hostedIntegration,
      credentials: oauthCredentials,
    });
    await nango.createIntegration({ provider: 'fake-key', unique_key: keyIntegration });
    // Raw HTTP: @nangohq/node's types do not know an APP integration's optional OAuth client.
    const created = await call(stack.gatewayUrl, 'POST', '/integrations', {
      key: stack.secretKey,
      body: {
        provider: 'fake-app',
        unique_key: appIntegration,
        credentials: {
          type: 'APP',
          app_id: '99',
          app_link: `${fake.url}/apps/test-app`,
          private_key: appKeys.privateKey,
          client_id: fake.clientId,
          client_secret: fake.clientSecret,
        },
      },
    });
    expect(created.status).toBe(200);
    fake.setAppSetupUrl(`${stack.gatewayUrl}/app-auth/connect`, appKeys.publicKey);
  }, 120_000);

  afterAll(async () => {
    await db?.end();
    await stack?.stop();
    await fake?.stop();
    await attacker?.stop();
    await receiver?.stop();
  });

  describe('client-secret exfiltration through connection config', () => {
    it('refuses a host field pointing the token URL at the end user’s server: nothing is sent there, nothing stored', async () => {
      const token = await session({ tags: { end_user_id: 'exfil-host' } });
      const popup = await fetch(
        `${stack.gatewayUrl}${withToken(`/oauth/connect/${hostedIntegration}?params%5Bhost%5D=${encodeURIComponent(attackerHost())}`, token)}`,
        { redirect: 'manual' },
      );
      expect(popup.status).toBe(400);
      expect(await popup.text()).toContain('Your instance host has an invalid format');

      const page = await call(
        stack.gatewayUrl,
        'POST',
        withToken(`/oauth/connect/${hostedIntegration}`, token),
        {
          body: { params: { host: attackerHost() } },
        },
      );
      expect(expectError(page, 400, 'invalid_connection').errors?.map((e) => e.path)).toEqual([
        ['params', 'host'],
      ]);
      expect(attacker.authorizeRequests).toEqual([]);
      expect(attacker.tokenRequests).toEqual([]);
      expect(await connectionCount(hostedIntegration)).toBe(0);
    });

    it('refuses params the provider form does not declare, and fields the provider fills itself', async () => {
      const token = await session({ tags: { end_user_id: 'exfil-undeclared' } });
      const undeclared = await call(
        stack.gatewayUrl,
        'POST',
        withToken(`/oauth/connect/${oauthIntegration}`, token),
        { body: { params: { tenant: 'acme', token_url: `${attacker.url}/steal`, team: 'other-team' } } },
      );
      const detail = expectError(undeclared, 400, 'invalid_connection');
      expect(detail.errors?.map((e) => e.path)).toEqual([
        ['params', 'token_url'],
        ['params', 'team'],
      ]);
      const apiKey = await call(
        stack.gatewayUrl,
        'POST',
        withToken(
          `/api-auth/api-key/${keyIntegration}?params%5Bbase_url%5D=https%3A%2F%2Fevil.invalid`,
          token,
        ),
        { body: { apiKey: fake.goodApiKey } },
      );
      expect(expectError(apiKey, 400, 'invalid_connection').errors?.map((e) => e.path)).toEqual([
        ['params', 'base_url'],
      ]);
      expect(fake.verificationKeys).toEqual([]);
      expect(fake.authorizeRequests).toEqual([]);
      expect(await connectionCount(oauthIntegration)).toBe(0);
      expect(await connectionCount(keyIntegration)).toBe(0);
    });

    it('holds integrations_config_defaults and connection import to the same host patterns', async () => {
      const defaults = await call(stack.gatewayUrl, 'POST', '/connect/sessions', {
        key: stack.secretKey,
        body: {
          tags: { end_user_id: 'exfil-defaults' },
          integrations_config_defaults: {
            [hostedIntegration]: { connection_config: { host: attackerHost() } },
          },
        },
      });
      expect(expectError(defaults, 400, 'invalid_body').errors?.map((e) => e.path)).toEqual([
        ['integrations_config_defaults', hostedIntegration, 'connection_config', 'host'],
      ]);

      const imported = await call(stack.gatewayUrl, 'POST', '/connections', {
        key: stack.secretKey,
        body: {
          provider_config_key: hostedIntegration,
          connection_id: `import-${run}`,
          connection_config: { host: attackerHost() },
          credentials: { type: 'OAUTH2', access_token: 'at', refresh_token: 'rt' },
        },
      });
      expect(expectError(imported, 400, 'invalid_body').errors?.map((e) => e.path)).toEqual([
        ['connection_config', 'host'],
      ]);
      expect(await connectionCount(hostedIntegration)).toBe(0);
      expect(attacker.tokenRequests).toEqual([]);
    });
  });

  describe('OAuth state bound to the browser that started the flow', () => {
    const start = async (token: string, jar: CookieJar) => {
      const res = await fetch(
        `${stack.gatewayUrl}${withToken(`/oauth/connect/${oauthIntegration}?params%5Btenant%5D=acme`, token)}`,
        { redirect: 'manual' },
      );
      expect(res.status).toBe(302);
      jar.take(res);
      return { res, authorizeUrl: new URL(res.headers.get('location')!) };
    };
    const atProvider = async (authorizeUrl: URL) => {
      const res = await fake.get(authorizeUrl);
      expect(res.status).toBe(302);
      return new URL(res.location!);
    };

    it('sets an HttpOnly, SameSite=Lax nonce cookie scoped to the callback paths', async () => {
      const token = await session({ tags: { end_user_id: 'cookie-shape' } });
      const { res, authorizeUrl } = await start(token, new CookieJar());
      const state = authorizeUrl.searchParams.get('state')!;
      const cookies = res.headers.getSetCookie();
      expect(cookies).toEqual([
        expect.stringMatching(
          new RegExp(
            `^sb_oauth_${state}=[A-Za-z0-9_-]{43}; Path=/oauth/callback; Max-Age=900; HttpOnly; SameSite=Lax$`,
          ),
        ),
        expect.stringMatching(
          new RegExp(
            `^sb_oauth_${state}=[A-Za-z0-9_-]{43}; Path=/app-auth/connect; Max-Age=900; HttpOnly; SameSite=Lax$`,
          ),
        ),
      ]);
      // The cookie carries a nonce, not the state or anything the provider URL shows.
      expect(authorizeUrl.toString()).not.toContain(cookies[0]!.split(';')[0]!.split('=')[1]!);
    });

    it('refuses a callback that lands in another browser (connection fixation): no code exchanged, nothing stored', async () => {
      // The attacker starts a flow with their own connect link and sends the provider URL to a victim.
      const attackerBrowser = new CookieJar();
      const token = await session({ end_user: { id: `attacker-${run}` } });
      const { authorizeUrl } = await start(token, attackerBrowser);
      const tokenRequestsBefore = fake.tokenRequests.length;

      // The victim approves at the provider in their own browser, which holds no cookie for this state.
      const callback = await atProvider(authorizeUrl);
      const victim = await fetch(callback);
      const html = await victim.text();
      expect(victim.status).toBe(400);
      expect(html).toContain('This authorization was not started in this browser');
      expect(html).toContain('nango_oauth_callback_error');

      // Another browser with a cookie of its own flow does no better.
      const victimBrowser = new CookieJar();
      const victimToken = await session({ end_user: { id: `victim-${run}` } });
      const own = await start(victimToken, victimBrowser);
      const ownState = own.authorizeUrl.searchParams.get('state')!;
      const forged = `sb_oauth_${authorizeUrl.searchParams.get('state')}=${victimBrowser.headers().cookie!.split('=')[1]}`;
      const second = await atProvider(
        await start(token, new CookieJar()).then(({ authorizeUrl: url }) => url),
      );
      const withOtherCookie = await fetch(second, {
        headers: { cookie: `${forged}; sb_oauth_${ownState}=x` },
      });
      expect(withOtherCookie.status).toBe(400);
      expect(await withOtherCookie.text()).toContain('not started in this browser');

      expect(fake.tokenRequests.length).toBe(tokenRequestsBefore);
      expect(await connectionCount(oauthIntegration)).toBe(0);
      // The state was spent: replaying it now with the right cookie finds nothing either.
      const replay = await fetch(callback, { headers: attackerBrowser.headers() });
      expect(replay.status).toBe(400);
      expect(await connectionCount(oauthIntegration)).toBe(0);
    });

    it("binds the connect page's POST start to the first browser that opens its launch URL", async () => {
      const token = await session({ tags: { end_user_id: 'launch' } });
      const started = await call(
        stack.gatewayUrl,
        'POST',
        withToken(`/oauth/connect/${oauthIntegration}`, token),
        {
          body: { params: { tenant: 'acme' } },
        },
      );
      expect(started.status).toBe(200);
      const launchUrl = (started.body as { url: string }).url;
      expect(launchUrl).not.toContain(fake.url);
      const first = new CookieJar();
      const launch = await fetch(launchUrl, { redirect: 'manual' });
      expect(launch.status).toBe(302);
      first.take(launch);
      const again = await fetch(launchUrl, { redirect: 'manual' });
      expect(again.status).toBe(409);
      expect(again.headers.getSetCookie()).toEqual([]);
      expect(await again.text()).toContain('already opened');

      const callback = await atProvider(new URL(launch.headers.get('location')!));
      const page = await fetch(callback, { headers: first.headers() });
      expect(page.status).toBe(200);
      expect(await connectionCount(oauthIntegration)).toBe(1);
      // The binding is spent with the callback: the response removes the cookie.
      expect(page.headers.getSetCookie().every((c) => /Max-Age=0/.test(c))).toBe(true);
    });
  });

  describe('GitHub App installation takeover', () => {
    /** The attacker installs the app on their own account and comes back with a genuine redirect. */
    const installAsAttacker = async () => {
      const browser = new CookieJar();
      const token = await session({ end_user: { id: `app-attacker-${run}-${randomUUID().slice(0, 4)}` } });
      const start = await fetch(
        `${stack.gatewayUrl}${withToken(`/oauth/connect/${appIntegration}`, token)}`,
        {
          redirect: 'manual',
        },
      );
      expect(start.status).toBe(302);
      browser.take(start);
      const back = await fake.get(new URL(start.headers.get('location')!));
      expect(back.status).toBe(302);
      const setup = new URL(back.location!);
      expect(setup.searchParams.get('installation_id')).toBe('4242');
      return { browser, setup };
    };

    it("refuses another organisation's installation_id: the installing user's token cannot see it, no token minted", async () => {
      const { browser, setup } = await installAsAttacker();
      setup.searchParams.set('installation_id', '5151'); // the victim organisation's installation
      const page = await fetch(setup, { headers: browser.headers() });
      const html = await page.text();
      expect(page.status).toBe(400);
      expect(html).toContain('cannot see installation 5151');
      expect(fake.installationTokenRequests).not.toContain('5151');
      expect(await connectionCount(appIntegration)).toBe(0);
    });

    it('refuses an installation named by the query alone (no user code to check it with)', async () => {
      const { browser, setup } = await installAsAttacker();
      setup.searchParams.delete('code');
      setup.searchParams.set('installation_id', '5151');
      const page = await fetch(setup, { headers: browser.headers() });
      expect(page.status).toBe(400);
      expect(await page.text()).toContain('without a user authorization');
      expect(fake.installationTokenRequests).not.toContain('5151');
      expect(await connectionCount(appIntegration)).toBe(0);
    });

    it('accepts the installation the installing user can see', async () => {
      const checks = fake.installationChecks;
      const { browser, setup } = await installAsAttacker();
      const page = await fetch(setup, { headers: browser.headers() });
      expect(page.status).toBe(200);
      expect(fake.installationChecks).toBe(checks + 1);
      expect(fake.installationTokenRequests).toEqual(['4242']);
      expect(await connectionCount(appIntegration)).toBe(1);
    });
  });

  describe('webhook routing keys come from the provider, never from the browser', () => {
    const connectRouted = async (
      tenant: string,
      extra: { params?: Record<string, string>; defaults?: unknown } = {},
    ) => {
      const browser = new CookieJar();
      const token = await session({
        end_user: { id: `routed-${tenant}-${run}` },
        ...(extra.defaults ? { integrations_config_defaults: { [routedIntegration]: extra.defaults } } : {}),
      });
      const started = await call(
        stack.gatewayUrl,
        'POST',
        withToken(`/oauth/connect/${routedIntegration}`, token),
        {
          body: { params: { tenant, ...extra.params } },
        },
      );
      if (started.status !== 200) return { started, connectionId: undefined };
      const launch = await fetch((started.body as { url: string }).url, { redirect: 'manual' });
      browser.take(launch);
      const approved = await fake.get(new URL(launch.headers.get('location')!));
      const page = await fetch(new URL(approved.location!), { headers: browser.headers() });
      const html = await page.text();
      expect(page.status).toBe(200);
      return { started, connectionId: /"connectionId":"([^"]+)"/.exec(html)![1]! };
    };
    const providerWebhook = (body: unknown) => {
      const text = JSON.stringify(body);
      return fetch(`${stack.gatewayUrl}/webhook/${stack.environmentUuid}/${routedIntegration}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-fake-signature': createHmac('sha256', ROUTED_WEBHOOK_SECRET).update(text).digest('hex'),
        },
        body: text,
      });
    };

    beforeAll(async () => {
      const created = await call(stack.gatewayUrl, 'POST', '/integrations', {
        key: stack.secretKey,
        body: {
          provider: 'fake-routed',
          unique_key: routedIntegration,
          credentials: {
            type: 'OAUTH2',
            client_id: fake.clientId,
            client_secret: fake.clientSecret,
            webhook_secret: ROUTED_WEBHOOK_SECRET,
          },
        },
      });
      expect(created.status).toBe(200);
      const settings = await call(stack.gatewayUrl, 'PATCH', '/environment', {
        key: stack.secretKey,
        body: { webhook_settings: { primary_url: `${receiver.url}/primary` } },
      });
      expect(settings.status).toBe(200);
    });

    it("ignores a browser-supplied routing key, and does not forward another tenant's provider webhook to the attacker", async () => {
      const victim = await connectRouted('victim');
      expect(
        (await nango.getConnection(routedIntegration, victim.connectionId!)).connection_config,
      ).toMatchObject({
        portalId: 'portal-victim',
      });

      // The attacker claims the victim's portal from the page: refused, nothing stored.
      const claimed = await connectRouted('attacker', { params: { portalId: 'portal-victim' } });
      expect(expectError(claimed.started, 400, 'invalid_connection').errors?.map((e) => e.path)).toEqual([
        ['params', 'portalId'],
      ]);
      // Preset through a session default it is dropped; the provider's answer fills it.
      const attacker = await connectRouted('attacker', {
        defaults: { connection_config: { portalId: 'portal-victim' } },
      });
      const stored = await nango.getConnection(routedIntegration, attacker.connectionId!);
      expect(stored.connection_config).toMatchObject({ portalId: 'portal-attacker' });

      const forwardsTo = (connectionId: string) =>
        receiver.received.filter((r) => {
          const body = JSON.parse(r.body) as { type?: string; connectionId?: string };
          return body.type === 'forward' && body.connectionId === connectionId;
        });
      const hook = await providerWebhook({
        portalId: 'portal-victim',
        event: 'contact.created',
        id: randomUUID(),
      });
      expect(hook.status).toBe(200);
      const deadline = Date.now() + 15_000;
      while (forwardsTo(victim.connectionId!).length === 0 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      expect(forwardsTo(victim.connectionId!)).toHaveLength(1);
      await new Promise((r) => setTimeout(r, 500));
      expect(forwardsTo(attacker.connectionId!)).toEqual([]);
    });
  });

  describe('small holes', () => {
    it('ends the connect session once its connection is stored: the token stops working', async () => {
      const token = await session({ end_user: { id: `once-${run}` } });
      const first = await call(
        stack.gatewayUrl,
        'POST',
        withToken(`/api-auth/api-key/${keyIntegration}`, token),
        {
          body: { apiKey: fake.goodApiKey },
        },
      );
      expect(first.status).toBe(200);
      const again = await call(
        stack.gatewayUrl,
        'POST',
        withToken(`/api-auth/api-key/${keyIntegration}`, token),
        {
          body: { apiKey: fake.goodApiKey },
        },
      );
      expectError(again, 401, 'unknown_connect_session_token');
      const read = await call(stack.gatewayUrl, 'GET', '/connect/session', {
        headers: { authorization: `Bearer ${token}` },
      });
      expectError(read, 401, 'unknown_connect_session_token');
      expect(await connectionCount(keyIntegration)).toBe(1);
    });

    it('refuses end-user authorization_params that replace the flow’s own parameters or widen its scopes', async () => {
      const token = await session({ tags: { end_user_id: 'params' } });
      const before = fake.authorizeRequests.length;
      const hostile = await call(
        stack.gatewayUrl,
        'POST',
        withToken(`/oauth/connect/${oauthIntegration}`, token),
        {
          body: {
            params: { tenant: 'acme' },
            authorization_params: {
              response_type: 'token',
              redirect_uri: `${attacker.url}/catch`,
              state: 'mine',
              scope: 'admin',
            },
            user_scope: 'admin',
          },
        },
      );
      expect(expectError(hostile, 400, 'invalid_connection').errors?.map((e) => e.path)).toEqual([
        ['authorization_params', 'response_type'],
        ['authorization_params', 'redirect_uri'],
        ['authorization_params', 'state'],
        ['authorization_params', 'scope'],
        ['user_scope'],
      ]);
      const popup = await fetch(
        `${stack.gatewayUrl}${withToken(`/oauth/connect/${oauthIntegration}?params%5Btenant%5D=acme&authorization_params%5Bscope%5D=admin`, token)}`,
        { redirect: 'manual' },
      );
      expect(popup.status).toBe(400);
      expect(fake.authorizeRequests.length).toBe(before);
    });
  });
});
