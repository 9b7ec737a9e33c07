import { randomBytes, randomUUID } from 'node:crypto';
import type { Nango } from '@nangohq/node';
import type { Stack } from '@switchboard/testing';
import type { ConnectFakeProvider, GithubUser } from './support/connect-fakes';
import {
  ConnectAttackWorld,
  connectLogs,
  expectNoSecretIn,
  githubAppBrowser,
  oauthBrowser,
  routedFlows,
  until,
} from './support/connect-attacks';
import { providerWebhooksSettled } from './support/barriers';
import { call, CookieJar, expectError, withSessionToken } from './support/http';
import { START_HOOK_TIMEOUT_MS } from './support/processes';

/**
 * Attacks an end user holding a connect link can try through the public surface (gateway, connect page,
 * auth routes), each shown refused with nothing stored, sent or forwarded. The end user is not trusted:
 * every query parameter and body field below is what a hostile browser would send. Providers are fakes on
 * loopback; `attacker` is a second fake standing in for a server the end user controls.
 */
describe('connect flows refuse what a hostile end user sends', () => {
  let stack: Stack, nango: Nango, fake: ConnectFakeProvider, attacker: ConnectFakeProvider;
  const run = randomUUID().slice(0, 8);
  const world = new ConnectAttackWorld(run);
  const {
    oauth: oauthIntegration,
    hosted: hostedIntegration,
    key: keyIntegration,
    app: appIntegration,
    custom: customIntegration,
    routed: routedIntegration,
    keyRouted,
  } = world.integrations;
  const { session, connectionCount, attackerHost, deliveredWith } = world;
  /** A POST by the end user's browser, with the connect session's token. */
  const postAsEndUser = (path: string, token: string, body: unknown) =>
    call(stack.gatewayUrl, 'POST', withSessionToken(path, token), { body });

  beforeAll(async () => {
    ({ stack, nango, fake, attacker } = await world.start());
  }, START_HOOK_TIMEOUT_MS);

  afterAll(() => world.stop());

  describe('client-secret exfiltration through connection config', () => {
    it('refuses a host field pointing the token URL at the end user’s server: nothing is sent there, nothing stored', async () => {
      const token = await session({ tags: { end_user_id: 'exfil-host' } });
      const popup = await fetch(
        `${stack.gatewayUrl}${withSessionToken(`/oauth/connect/${hostedIntegration}?params%5Bhost%5D=${encodeURIComponent(attackerHost())}`, token)}`,
        { redirect: 'manual' },
      );
      expect(popup.status).toBe(400);
      expect(await popup.text()).toContain('Your instance host has an invalid format');

      const page = await postAsEndUser(`/oauth/connect/${hostedIntegration}`, token, {
        params: { host: attackerHost() },
      });
      expect(expectError(page, 400, 'invalid_connection').errors?.map((e) => e.path)).toEqual([
        ['params', 'host'],
      ]);
      expect(attacker.authorizeRequests).toEqual([]);
      expect(attacker.tokenRequests).toEqual([]);
      expect(await connectionCount(hostedIntegration)).toBe(0);
    });

    it('refuses params the provider form does not declare, and fields the provider fills itself', async () => {
      const token = await session({ tags: { end_user_id: 'exfil-undeclared' } });
      const undeclared = await postAsEndUser(`/oauth/connect/${oauthIntegration}`, token, {
        params: { tenant: 'acme', token_url: `${attacker.url}/steal`, team: 'other-team' },
      });
      const detail = expectError(undeclared, 400, 'invalid_connection');
      expect(detail.errors?.map((e) => e.path)).toEqual([
        ['params', 'token_url'],
        ['params', 'team'],
      ]);
      const apiKey = await postAsEndUser(
        `/api-auth/api-key/${keyIntegration}?params%5Bbase_url%5D=https%3A%2F%2Fevil.invalid`,
        token,
        { apiKey: fake.goodApiKey },
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
    const { start, atProvider } = oauthBrowser(world, oauthIntegration);

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

    it('refuses a callback that lands in another browser (connection fixation): its code spent, nothing stored', async () => {
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

      expect(await connectionCount(oauthIntegration)).toBe(0);
      // The code the victim approved was spent by the refused callback (exchanged once, the token thrown
      // away): the attacker's own browser, which holds the flow's cookie, cannot complete with it.
      expect(fake.tokenRequests.slice(tokenRequestsBefore).map((r) => r.params.get('code'))).toContain(
        callback.searchParams.get('code'),
      );
      const replay = await fetch(callback, { headers: attackerBrowser.headers() });
      expect(replay.status).toBe(400);
      expect(await connectionCount(oauthIntegration)).toBe(0);
    });

    it('a callback without the binding cookie does not spend the state: the bound browser still completes', async () => {
      const before = await connectionCount(oauthIntegration);
      const user = new CookieJar();
      const token = await session({ end_user: { id: `bound-${run}` } });
      const { authorizeUrl } = await start(token, user);
      const state = authorizeUrl.searchParams.get('state')!;
      // Anyone who saw the state (a shared screen, a log) opens its callback, with no cookie or a made-up one.
      for (const cookie of [undefined, `sb_oauth_${state}=${'A'.repeat(43)}`]) {
        const refused = await fetch(`${stack.gatewayUrl}/oauth/callback?state=${state}&code=made-up`, {
          headers: cookie ? { cookie } : {},
        });
        expect(refused.status).toBe(400);
        expect(await refused.text()).toContain('not started in this browser');
      }
      const page = await fetch(await atProvider(authorizeUrl), { headers: user.headers() });
      expect(page.status).toBe(200);
      expect(await connectionCount(oauthIntegration)).toBe(before + 1);
    });

    it("binds the connect page's POST start to the first browser that opens its launch URL", async () => {
      const before = await connectionCount(oauthIntegration);
      const token = await session({ tags: { end_user_id: 'launch' } });
      const started = await postAsEndUser(`/oauth/connect/${oauthIntegration}`, token, {
        params: { tenant: 'acme' },
      });
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
      expect(await connectionCount(oauthIntegration)).toBe(before + 1);
      // The binding is spent with the callback: the response removes the cookie.
      expect(page.headers.getSetCookie().every((c) => /Max-Age=0/.test(c))).toBe(true);
    });
  });

  describe('GitHub App installation takeover', () => {
    const { install, complete } = githubAppBrowser(world);
    const attacker = () => `app-attacker-${run}-${randomUUID().slice(0, 4)}`;

    it("refuses another organisation's installation_id: the installing user's token cannot see it, no token minted", async () => {
      const before = await connectionCount(appIntegration);
      const { browser, setup } = await install(attacker());
      setup.searchParams.set('installation_id', '5151'); // the victim organisation's installation
      const page = await complete(browser, setup);
      const html = await page.text();
      expect(page.status).toBe(400);
      expect(html).toContain('cannot see installation 5151');
      expect(fake.installationTokenRequests).not.toContain('5151');
      expect(await connectionCount(appIntegration)).toBe(before);
    });

    it("replays a victim's unexchanged install code into the attacker's own flow (code injection): refused, nothing stored", async () => {
      const before = await connectionCount(appIntegration);
      // 1. The victim's install redirect was never loaded (it leaked from their history, a log, a screen).
      const neverLoaded = await install(`app-victim-${run}`, 'victim');
      expect(neverLoaded.setup.searchParams.get('installation_id')).toBe('5151');
      const victimCode = neverLoaded.setup.searchParams.get('code')!;
      const own = await install(attacker());
      own.setup.searchParams.set('code', victimCode);
      own.setup.searchParams.set('installation_id', '5151');
      const injected = await complete(own.browser, own.setup);
      expect(injected.status).toBe(400);
      expect(await injected.text()).toContain('cannot see installation 5151');

      // 2. The victim's code goes into the attacker's user-authorization callback instead.
      const neverLoaded2 = await install(`app-victim2-${run}`, 'victim');
      const own2 = await install(attacker());
      own2.setup.searchParams.delete('code');
      own2.setup.searchParams.set('installation_id', '5151');
      const atCallback = await complete(own2.browser, own2.setup, 'acme', (callback) =>
        callback.searchParams.set('code', neverLoaded2.setup.searchParams.get('code')!),
      );
      expect(atCallback.status).toBe(400);

      // 3. The victim's redirect was opened in a browser without the binding (refused for its state):
      // the refusal spends its code, so replaying it afterwards gets nothing either.
      const refusedVictim = await install(`app-victim3-${run}`, 'victim');
      const elsewhere = await fetch(refusedVictim.setup);
      expect(elsewhere.status).toBe(400);
      expect(await elsewhere.text()).toContain('not started in this browser');
      const spent = refusedVictim.setup.searchParams.get('code')!;
      expect(fake.githubCodeExchanges.filter((e) => e.code === spent)).toHaveLength(1);
      const own3 = await install(attacker());
      own3.setup.searchParams.set('code', spent);
      own3.setup.searchParams.set('installation_id', '5151');
      expect((await complete(own3.browser, own3.setup)).status).toBe(400);

      // The code injected at the user-authorization callback failed its PKCE check; nothing reached 5151.
      expect(
        fake.githubCodeExchanges.find((e) => e.code === neverLoaded2.setup.searchParams.get('code'))?.outcome,
      ).toBe('pkce_mismatch');
      expect(fake.installationTokenRequests).not.toContain('5151');
      expect(await connectionCount(appIntegration)).toBe(before);
    });

    it("GitHub App OAuth (CUSTOM): replays a victim's unexchanged install code into the attacker's flow: refused, nothing stored; the own flow completes", async () => {
      const before = await connectionCount(customIntegration);
      const custom = (endUserId: string, user: GithubUser = 'acme') =>
        install(endUserId, user, customIntegration);
      // 1. The victim's install redirect leaked before it was loaded; its code and installation go into
      // the attacker's own flow, in the attacker's own browser.
      const neverLoaded = await custom(`custom-victim-${run}`, 'victim');
      expect(neverLoaded.setup.searchParams.get('installation_id')).toBe('5151');
      const victimCode = neverLoaded.setup.searchParams.get('code')!;
      const own = await custom(attacker());
      own.setup.searchParams.set('code', victimCode);
      own.setup.searchParams.set('installation_id', '5151');
      const injected = await complete(own.browser, own.setup);
      expect(injected.status).toBe(400);
      expect(await injected.text()).toContain('cannot see installation 5151');
      // The install redirect's code was spent once, its token dropped; it never checked anything.
      expect(fake.githubCodeExchanges.filter((e) => e.code === victimCode)).toEqual([
        { code: victimCode, outcome: 'issued:victim' },
      ]);

      // 2. The victim's code at the attacker's user-authorization callback fails its PKCE check.
      const neverLoaded2 = await custom(`custom-victim2-${run}`, 'victim');
      const victimCode2 = neverLoaded2.setup.searchParams.get('code')!;
      const own2 = await custom(attacker());
      own2.setup.searchParams.delete('code');
      own2.setup.searchParams.set('installation_id', '5151');
      const atCallback = await complete(own2.browser, own2.setup, 'acme', (callback) =>
        callback.searchParams.set('code', victimCode2),
      );
      expect(atCallback.status).toBe(400);
      expect(fake.githubCodeExchanges.find((e) => e.code === victimCode2)?.outcome).toBe('pkce_mismatch');

      // 3. Opened in a browser without the binding, the victim's redirect is refused and its code spent.
      const refusedVictim = await custom(`custom-victim3-${run}`, 'victim');
      const elsewhere = await fetch(refusedVictim.setup);
      expect(elsewhere.status).toBe(400);
      expect(await elsewhere.text()).toContain('not started in this browser');
      const spent = refusedVictim.setup.searchParams.get('code')!;
      expect(fake.githubCodeExchanges.filter((e) => e.code === spent)).toHaveLength(1);
      const own3 = await custom(attacker());
      own3.setup.searchParams.set('code', spent);
      own3.setup.searchParams.set('installation_id', '5151');
      expect((await complete(own3.browser, own3.setup)).status).toBe(400);

      expect(fake.installationTokenRequests).not.toContain('5151');
      expect(await connectionCount(customIntegration)).toBe(before);

      // The attacker's own installation, through its own user authorization, is accepted.
      const legit = await custom(attacker());
      const page = await complete(legit.browser, legit.setup);
      expect(page.status).toBe(200);
      expect(await connectionCount(customIntegration)).toBe(before + 1);
    });

    it('refuses a user authorization that comes back without a code', async () => {
      const before = await connectionCount(appIntegration);
      const { browser, setup } = await install(attacker());
      const page = await complete(browser, setup, 'acme', (callback) => callback.searchParams.delete('code'));
      expect(page.status).toBe(400);
      expect(await page.text()).toContain('GitHub sent no user authorization back');
      expect(await connectionCount(appIntegration)).toBe(before);
    });

    it('accepts the installation the installing user can see', async () => {
      const before = await connectionCount(appIntegration);
      const checks = fake.installationChecks;
      const minted = fake.installationTokenRequests.length;
      const { browser, setup } = await install(attacker());
      const page = await complete(browser, setup);
      expect(page.status).toBe(200);
      expect(fake.installationChecks).toBe(checks + 1);
      expect(fake.installationTokenRequests.slice(minted)).toEqual(['4242']);
      expect(await connectionCount(appIntegration)).toBe(before + 1);
    });
  });

  describe("a provider's error text never reaches the end user", () => {
    // `+ / = ~` and a space: raw-only redaction missed them once URL-encoded.
    const secret = `Sx+9/a=b~c d_${run}`;
    const expectNoSecret = (text: string, clientId: string) => expectNoSecretIn(text, secret, clientId);
    const allLogs = () => connectLogs(stack);

    it.each(['fake-echo', 'fake-echo-basic'])(
      '%s: the callback page shows a code and a sentence, never the client secret in any encoding; the logs neither',
      async (provider) => {
        const key = `${provider}-${run}`;
        await nango.createIntegration({
          provider,
          unique_key: key,
          credentials: { type: 'OAUTH2', client_id: fake.clientId, client_secret: secret, scopes: 'read' },
        });
        const page = await world.oauthRoundTrip(key, `echo-${run}`);
        const html = await page.text();
        expect(page.status).toBe(400);
        // What the page posts to the SDK: the error type and our own sentence with the provider's code.
        expect(html).toContain('nango_oauth_callback_error');
        expect(html).toContain('token_err');
        expect(html).toContain('the provider answered HTTP 400');
        expectNoSecret(html, fake.clientId);
        expect(await connectionCount(key)).toBe(0);
        const logs = allLogs();
        expectNoSecret(logs.replace(/grant_type=|client_secret/g, ''), fake.clientId);
        // The details are kept for the operator, redacted.
        expect(logs).toMatch(/the provider said: .*\[redacted\]/);
      },
    );

    it('the client-credentials API answer the SDK sees carries no secret and no provider text', async () => {
      const key = `echo-cc-${run}`;
      await nango.createIntegration({ provider: 'fake-echo-cc', unique_key: key });
      const token = await session({ end_user: { id: `echo-cc-${run}` } });
      const res = await call(stack.gatewayUrl, 'POST', withSessionToken(`/oauth2/auth/${key}`, token), {
        body: { client_id: 'machine-id', client_secret: secret },
      });
      const error = expectError(res, 400, 'invalid_credentials');
      expect(error.message).toContain('the provider answered HTTP 400');
      expectNoSecret(JSON.stringify(res.body), 'machine-id');
      expectNoSecret(allLogs().replace(/grant_type=|client_secret/g, ''), 'machine-id');
    });
  });

  describe('webhook routing keys come from the provider, never from the browser', () => {
    const { createRouted, createKeyRouted, connectRouted, providerWebhook, connectKey, svixWebhook } =
      routedFlows(world, run);

    beforeAll(createRouted);

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

      const { forwardsTo } = world;
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
      // Every forward the webhook could cause is out: one to the attacker would have been received by now.
      await providerWebhooksSettled(stack);
      expect(forwardsTo(attacker.connectionId!)).toEqual([]);
    });

    describe('of an API-key provider, from a post-connect call made with the typed key', () => {
      beforeAll(createKeyRouted);

      it('stores the instance each key belongs to, and routes a signed webhook to that connection only', async () => {
        const [acme, globex] = [`acme${run}`, `globex${run}`];
        const ids: string[] = [];
        for (const name of [acme, globex]) {
          const res = await connectKey(`sk_test_${name}`);
          expect(res.status).toBe(200);
          const { connectionId } = res.body as { connectionId: string };
          ids.push(connectionId);
          const stored = await nango.getConnection(keyRouted, connectionId);
          expect(stored.connection_config).toMatchObject({ instance_id: `ins_${name}` });
        }
        // Asked with the key where the proxy puts it (Authorization: Bearer), once per connect.
        expect(fake.instanceLookups.filter((key) => key.endsWith(run))).toEqual([
          `sk_test_${acme}`,
          `sk_test_${globex}`,
        ]);
        // Claiming an instance from the page is refused, nothing stored.
        const claimed = await connectKey(`sk_test_other${run}`, { instance_id: `ins_${acme}` });
        expect(expectError(claimed, 400, 'invalid_connection').errors?.map((e) => e.path)).toEqual([
          ['params', 'instance_id'],
        ]);
        expect(await connectionCount(keyRouted)).toBe(2);

        const marker = `acme-${randomUUID()}`;
        const hook = await svixWebhook({
          data: { id: `user_${marker}`, object: 'user' },
          instance_id: `ins_${acme}`,
          object: 'event',
          type: 'user.created',
        });
        expect(hook.status).toBe(200);
        await until(() => deliveredWith(marker).length > 0);
        // A later one for an instance no connection has goes out unrouted; once it is out, anything else
        // for the first would be out too.
        const unknownMarker = `nobody-${randomUUID()}`;
        const unknown = await svixWebhook({
          data: { id: `user_${unknownMarker}` },
          instance_id: `ins_nobody${run}`,
          object: 'event',
          type: 'user.created',
        });
        expect(unknown.status).toBe(200);
        await until(() => deliveredWith(unknownMarker).length > 0);

        const forwards = deliveredWith(marker).map((r) => JSON.parse(r.body) as Record<string, unknown>);
        expect(forwards).toEqual([
          expect.objectContaining({ type: 'forward', providerConfigKey: keyRouted, connectionId: ids[0] }),
        ]);
        expect(deliveredWith(unknownMarker).map((r) => r.path)).toEqual(['/primary']);
      });

      it('fails the connect when the post-connect call is refused: nothing stored, neither the key nor the provider’s words shown', async () => {
        const before = await connectionCount(keyRouted);
        const badKey = `sk_live_${randomBytes(12).toString('hex')}`;
        const res = await connectKey(badKey);
        const error = expectError(res, 400, 'invalid_credentials');
        expect(error.message).toContain('post-connect call failed: the provider answered HTTP 401');
        expect(fake.instanceLookups).toContain(badKey);
        const shown = JSON.stringify(res.body);
        expect(shown).not.toContain(badKey);
        expect(shown).not.toContain('is not valid here');
        expect(await connectionCount(keyRouted)).toBe(before);
        for (const service of ['gateway', 'auth-connect', 'connections-vault'] as const)
          expect(stack.logs(service)).not.toContain(badKey);
      });
    });
  });

  describe('small holes', () => {
    it('ends the connect session once its connection is stored: the token stops working', async () => {
      const token = await session({ end_user: { id: `once-${run}` } });
      const first = await postAsEndUser(`/api-auth/api-key/${keyIntegration}`, token, {
        apiKey: fake.goodApiKey,
      });
      expect(first.status).toBe(200);
      const again = await postAsEndUser(`/api-auth/api-key/${keyIntegration}`, token, {
        apiKey: fake.goodApiKey,
      });
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
      const hostile = await postAsEndUser(`/oauth/connect/${oauthIntegration}`, token, {
        params: { tenant: 'acme' },
        authorization_params: {
          response_type: 'token',
          redirect_uri: `${attacker.url}/catch`,
          state: 'mine',
          scope: 'admin',
        },
        user_scope: 'admin',
      });
      expect(expectError(hostile, 400, 'invalid_connection').errors?.map((e) => e.path)).toEqual([
        ['authorization_params', 'response_type'],
        ['authorization_params', 'redirect_uri'],
        ['authorization_params', 'state'],
        ['authorization_params', 'scope'],
        ['user_scope'],
      ]);
      const popup = await fetch(
        `${stack.gatewayUrl}${withSessionToken(`/oauth/connect/${oauthIntegration}?params%5Btenant%5D=acme&authorization_params%5Bscope%5D=admin`, token)}`,
        { redirect: 'manual' },
      );
      expect(popup.status).toBe(400);
      expect(fake.authorizeRequests.length).toBe(before);
    });
  });
});
