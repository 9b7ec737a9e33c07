import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startStack, type Stack } from '@switchboard/testing';
import { chromium, type Browser } from 'playwright-core';
import { authModesProvidersYaml, startAuthModesFake, type AuthModesFake } from './support/auth-modes-fakes';
import { call, expectError } from './support/http';
import { STACK_READY_TIMEOUT_MS, waitFor } from './support/processes';
import { writeProvidersFile } from './support/providers-file';
import {
  HEYMARKET,
  TWO_STEP_CASES,
  TWO_STEP_PROVEN_ELSEWHERE,
  catalogTwoStepProviders,
  presentedToken,
  proxiedEndpoint,
  realOrigins,
  startTwoStepFake,
  twoStepProvidersYaml,
  type RecordedCall,
  type TwoStepCase,
  type TwoStepFake,
} from './support/two-step-fakes';
import { CONNECT_SERVICES } from './support/connect-fakes/stack';

/**
 * The auth modes where Switchboard obtains the credential itself — a JWT it signs (Snowflake key pair,
 * Ghost Admin, App Store Connect), a token call with the form's fields (TWO_STEP), Bill's login, a WSSE
 * digest per request — and the client-credentials variants (Auth0's audience, Microsoft's tenant and
 * .default scope). Each is connected through a connect session and the route the connect page posts to,
 * proxied to a fake provider on loopback that checks the credential where the real one expects it, and,
 * where it expires, proxied again after expiry with a new one. The real catalog entries are used, with
 * only their URLs pointed at the fake.
 */

/** The vault refreshes a token this long before it expires (the fake's tokens live a few seconds). */
const REFRESH_MARGIN_MS = 2000;
const CHROMIUM = process.env.SWITCHBOARD_CHROMIUM_PATH ?? '/usr/bin/chromium';

describe('auth modes that issue their own tokens', () => {
  let fake: AuthModesFake;
  let twoStep: TwoStepFake;
  let stack: Stack;
  let browser: Browser | undefined;
  const run = randomUUID().slice(0, 8);
  const snowflakeKeys = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const appleKeys = generateKeyPairSync('ec', {
    namedCurve: 'prime256v1',
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });

  const integration = async (provider: string, suffix = '') => {
    const key = `${provider}${suffix}-${run}`;
    const res = await call(stack.gatewayUrl, 'POST', '/integrations', {
      key: stack.secretKey,
      body: { provider, unique_key: key },
    });
    expect(res.status).toBe(200);
    return key;
  };
  /** What the connect page does: a session for the end user, then the mode's form route. */
  const connectWith = async (
    key: string,
    route: string,
    body: Record<string, unknown>,
    params: Record<string, string> = {},
    sessionExtra: Record<string, unknown> = {},
  ) => {
    const session = await call(stack.gatewayUrl, 'POST', '/connect/sessions', {
      key: stack.secretKey,
      body: { end_user: { id: `user-${randomUUID()}` }, allowed_integrations: [key], ...sessionExtra },
    });
    expect(session.status).toBe(201);
    const token = (session.body as { data: { token: string } }).data.token;
    const query = new URLSearchParams({ connect_session_token: token });
    for (const [name, value] of Object.entries(params)) query.set(`params[${name}]`, value);
    return call(stack.gatewayUrl, 'POST', `/${route}/${key}?${query.toString()}`, { body });
  };
  const connected = async (...args: Parameters<typeof connectWith>) => {
    const res = await connectWith(...args);
    expect({ status: res.status, body: res.body }).toEqual({
      status: 200,
      body: { connectionId: expect.any(String), providerConfigKey: args[0] },
    });
    return (res.body as { connectionId: string }).connectionId;
  };
  const proxy = (key: string, connectionId: string, path: string) =>
    call(stack.gatewayUrl, 'GET', `/proxy${path}`, {
      key: stack.secretKey,
      headers: { 'connection-id': connectionId, 'provider-config-key': key },
    });
  const proxiedToken = async (key: string, connectionId: string, path: string) => {
    const res = await proxy(key, connectionId, path);
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: expect.anything() });
    return (res.body as { token: string }).token;
  };
  const storedCredentials = async (key: string, connectionId: string) => {
    const res = await call(
      stack.gatewayUrl,
      'GET',
      `/connections/${connectionId}?provider_config_key=${key}`,
      {
        key: stack.secretKey,
      },
    );
    expect(res.status).toBe(200);
    return (res.body as { credentials: Record<string, unknown> }).credentials;
  };
  /** Waits (by polling the clock, not sleeping a guess) until the vault must refresh a credential expiring then. */
  const pastRefreshPoint = (expiresAt: string | number) =>
    waitFor(
      'the refresh point',
      async () => (Date.now() > new Date(expiresAt).getTime() - REFRESH_MARGIN_MS + 200 ? true : undefined),
      30_000,
      50,
    );

  beforeAll(async () => {
    fake = await startAuthModesFake({
      snowflakePublicKeyPem: snowflakeKeys.publicKey,
      applePublicKeyPem: appleKeys.publicKey,
    });
    twoStep = await startTwoStepFake();
    const dir = mkdtempSync(join(tmpdir(), 'auth-modes-'));
    const providersFile = writeProvidersFile(
      authModesProvidersYaml(fake.url) + twoStepProvidersYaml(twoStep.url),
    );
    // Both fakes' certificates, trusted by the services through one file.
    const caFile = join(dir, 'ca.pem');
    writeFileSync(caFile, readFileSync(fake.caFile, 'utf8') + readFileSync(twoStep.caFile, 'utf8'));
    const connectPort = await freePort();
    stack = await startStack({
      services: CONNECT_SERVICES,
      env: {
        SWITCHBOARD_CONNECT_URL: `http://127.0.0.1:${connectPort}`,
        SWITCHBOARD_PROVIDERS_FILE: providersFile,
        NODE_EXTRA_CA_CERTS: caFile,
        SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1',
      },
      serviceEnv: {
        'auth-connect': { CONNECT_PORT: String(connectPort), CONNECT_HOST: '127.0.0.1' },
        'connections-vault': { SWITCHBOARD_REFRESH_MARGIN_MS: String(REFRESH_MARGIN_MS) },
      },
      readyTimeoutMs: STACK_READY_TIMEOUT_MS,
    });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
    await fake?.stop();
    await twoStep?.stop();
  });

  it('JWT (Snowflake key pair): an RS256 token with Snowflake’s iss/sub, signed again once it expires', async () => {
    const key = await integration('snowflake-jwt');
    // The connect page's password field drops the PEM's line breaks: the key must still work.
    const oneLineKey = snowflakeKeys.privateKey.replace(/\n/g, ' ');
    const connectionId = await connected(
      key,
      'auth/jwt',
      { accountIdentifier: 'myorg-acct1', userName: 'robot', privateKey: oneLineKey },
      { subdomain: 'myorg-acct1' },
    );
    const first = await proxiedToken(key, connectionId, '/api/v2/statements');
    expect(fake.accepted.sf.map((t) => t.token)).toEqual([first]);
    const { exp } = fake.accepted.sf[0]!;
    expect(exp - fake.accepted.sf[0]!.iat).toBe(6);

    await pastRefreshPoint(exp * 1000);
    const second = await proxiedToken(key, connectionId, '/api/v2/statements');
    expect(second).not.toBe(first);
    expect(fake.accepted.sf.at(-1)!.exp).toBeGreaterThan(exp);

    // A key that is not a private key is refused at connect, and the answer does not echo it.
    const bad = await connectWith(
      key,
      'auth/jwt',
      {
        accountIdentifier: 'a',
        userName: 'b',
        privateKey: '-----BEGIN PRIVATE KEY-----\nTm90QUtleVNlY3JldFZhbHVl\n-----END PRIVATE KEY-----',
      },
      { subdomain: 'myorg-acct1' },
    );
    expect(expectError(bad, 400, 'invalid_credentials').message).toMatch(/not a valid RSA key/);
    expect(bad.text).not.toContain('Tm90QUtleVNlY3JldFZhbHVl');
  });

  it('JWT through the connect page in Chromium: the Snowflake form, a PEM pasted into a one-line field, then a proxied call', async () => {
    const key = await integration('snowflake-jwt', '-page');
    const session = await call(stack.gatewayUrl, 'POST', '/connect/sessions', {
      key: stack.secretKey,
      body: { end_user: { id: `browser-${run}` }, allowed_integrations: [key] },
    });
    expect(session.status).toBe(201);
    const link = (session.body as { data: { connect_link: string } }).data.connect_link;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
    });
    const page = await browser.newPage();
    await page.goto(link);
    await page.getByLabel(/Account host prefix/).fill('myorg-acct1');
    await page.getByLabel(/Account identifier/).fill('myorg-acct1');
    await page.getByLabel(/User name/).fill('robot');
    const keyField = page.getByLabel(/Private key/);
    expect(await keyField.getAttribute('type')).toBe('password');
    await keyField.fill(snowflakeKeys.privateKey);
    await page.getByRole('button', { name: 'Connect', exact: true }).click();
    await page.waitForSelector('h1:has-text("is connected")');

    const list = await call(stack.gatewayUrl, 'GET', `/connections?integrationId=${key}`, {
      key: stack.secretKey,
    });
    const connections = (list.body as { connections: { connection_id: string }[] }).connections;
    expect(connections).toHaveLength(1);
    const token = await proxiedToken(key, connections[0]!.connection_id, '/api/v2/statements');
    expect(fake.accepted.sf.at(-1)!.token).toBe(token);
  });

  it('JWT (Ghost Admin): "Authorization: Ghost <HS256 token>" with the key id as kid and a 5-minute life', async () => {
    const key = await integration('ghost-admin');
    const connectionId = await connected(
      key,
      'auth/jwt',
      { type: 'JWT', privateKey: `${fake.ghost.id}:${fake.ghost.secret}` },
      { adminDomain: 'mysite.ghost.io', version: 'v5.0' },
    );
    await proxiedToken(key, connectionId, '/users/');
    const accepted = fake.accepted.ghost.at(-1)!;
    expect(accepted.exp - accepted.iat).toBe(300);
    // A field the provider does not ask for is refused (it would be stored among the secrets).
    const extra = await connectWith(
      key,
      'auth/jwt',
      { privateKey: `${fake.ghost.id}:${fake.ghost.secret}`, other: 'x' },
      { adminDomain: 'mysite.ghost.io', version: 'v5.0' },
    );
    expectError(extra, 400, 'invalid_body');
  });

  it('JWT (App Store Connect): an ES256 token with the key id, issuer id and audience', async () => {
    const key = await integration('apple-app-store');
    const connectionId = await connected(key, 'auth/jwt', {
      issuerId: fake.apple.issuerId,
      privateKeyId: fake.apple.keyId,
      privateKey: appleKeys.privateKey,
    });
    const res = await proxy(key, connectionId, '/v1/apps');
    expect({ status: res.status, scope: (res.body as { scope: unknown }).scope }).toEqual({
      status: 200,
      scope: null,
    });
    // The private key is stored with the credentials: only a key allowed to read credentials sees it.
    const credentials = await storedCredentials(key, connectionId);
    expect(credentials).toEqual(
      expect.objectContaining({ type: 'JWT', token: expect.any(String), privateKey: appleKeys.privateKey }),
    );
  });

  it('TWO_STEP: the token call with the form’s fields, Bearer on the API, exactly one new token call after expiry however many calls wait', async () => {
    const key = await integration('perimeter81');
    const connectionId = await connected(
      key,
      'auth/two-step',
      { apiKey: fake.twoStep.apiKey },
      { domain: 'perimeter81' },
    );
    expect(fake.twoStep.issued).toHaveLength(1);
    const first = await proxiedToken(key, connectionId, '/v1/users');
    expect(first).toBe(fake.twoStep.issued[0]!.token);

    await pastRefreshPoint(fake.twoStep.issued[0]!.expiresAt);
    const tokens = await Promise.all(
      Array.from({ length: 8 }, () => proxiedToken(key, connectionId, '/v1/users')),
    );
    expect(fake.twoStep.issued).toHaveLength(2);
    expect(new Set(tokens)).toEqual(new Set([fake.twoStep.issued[1]!.token]));

    const wrong = await connectWith(
      key,
      'auth/two-step',
      { apiKey: 'wrong-key-value' },
      { domain: 'perimeter81' },
    );
    expect(expectError(wrong, 400, 'invalid_credentials').message).not.toContain('wrong-key-value');
  });

  it('TWO_STEP with a JWT assertion (Google service account): the token call carries an RS256 JWT signed with the typed key', async () => {
    const key = await integration('google-service-account');
    const connectionId = await connected(key, 'auth/two-step', {
      serviceAccountEmailAddress: fake.google.email,
      scopes: 'https://www.googleapis.com/auth/drive.readonly',
      privateKey: snowflakeKeys.privateKey,
    });
    expect(fake.google.tokens).toHaveLength(1);
    expect(await proxiedToken(key, connectionId, '/drive/v3/files')).toBe(fake.google.tokens[0]);
  });

  it('TWO_STEP (Tripletex): PUT with the tokens and a date a week ahead in the query, then Basic <company>:<session token>', async () => {
    const key = await integration('tripletex');
    const t = fake.tripletex;
    const connectionId = await connected(
      key,
      'auth/two-step',
      { consumerToken: t.consumerToken, employeeToken: t.employeeToken },
      { environment: 'tripletex.no' },
    );
    expect(t.sessions).toHaveLength(1);
    // proxyCompanyId was not typed: its catalog default (0) is used.
    expect(await proxiedToken(key, connectionId, '/v2/employee')).toBe(t.sessions[0]);
  });

  it('TWO_STEP (ConnectSecure): client-auth-token is base64(tenant+id:secret); Bearer and the answered x-user-id on the API; a new token after expiry', async () => {
    const key = await integration('connectsecure');
    const cs = fake.connectsecure;
    const connectionId = await connected(
      key,
      'auth/two-step',
      { client_id: cs.clientId, client_secret: cs.clientSecret },
      { base_url: 'pod1.myconnectsecure.com', tenant: cs.tenant },
    );
    const expectedAuthToken = Buffer.from(`${cs.tenant}+${cs.clientId}:${cs.clientSecret}`).toString(
      'base64',
    );
    expect(cs.authTokens).toEqual([expectedAuthToken]);
    expect(cs.issued).toHaveLength(1);
    expect(await proxiedToken(key, connectionId, '/r/company/companies')).toBe(cs.issued[0]!.token);
    expect(cs.apiCalls).toEqual([{ authorization: `Bearer ${cs.issued[0]!.token}`, userId: cs.userId }]);

    await pastRefreshPoint(cs.issued[0]!.expiresAt);
    const renewed = await proxiedToken(key, connectionId, '/r/company/companies');
    expect(cs.issued).toHaveLength(2);
    expect(renewed).toBe(cs.issued[1]!.token);
    expect(cs.authTokens).toEqual([expectedAuthToken, expectedAuthToken]);
    expect(cs.apiCalls.at(-1)).toEqual({ authorization: `Bearer ${renewed}`, userId: cs.userId });

    const wrong = await connectWith(
      key,
      'auth/two-step',
      { client_id: cs.clientId, client_secret: 'not-the-secret' },
      { base_url: 'pod1.myconnectsecure.com', tenant: cs.tenant },
    );
    expect(expectError(wrong, 400, 'invalid_credentials').message).not.toContain('not-the-secret');
  });

  it('BILL: login gives a session id sent as the sessionId and devKey headers; a new login when it ends', async () => {
    const key = await integration('bill');
    const b = fake.bill;
    const connectionId = await connected(key, 'auth/bill', {
      username: b.username,
      password: b.password,
      organization_id: b.organizationId,
      dev_key: b.devKey,
    });
    expect(b.sessions).toHaveLength(1);
    expect((await proxy(key, connectionId, '/v3/vendors')).body).toEqual({
      results: [],
      sessionId: b.sessions[0],
    });
    const { expires_at } = await storedCredentials(key, connectionId);
    await pastRefreshPoint(String(expires_at));
    expect((await proxy(key, connectionId, '/v3/vendors')).body).toEqual({
      results: [],
      sessionId: b.sessions[1],
    });
    expect(b.sessions).toHaveLength(2);

    const refused = await connectWith(key, 'auth/bill', {
      username: b.username,
      password: 'not-the-password',
      organization_id: b.organizationId,
      dev_key: b.devKey,
    });
    expect(expectError(refused, 400, 'invalid_credentials').message).not.toContain('not-the-password');
  });

  it('SIGNATURE (WSSE): every proxied request carries a fresh X-WSSE digest', async () => {
    const key = await integration('emarsys');
    const connectionId = await connected(key, 'auth/signature', {
      type: 'SIGNATURE',
      username: fake.wsse.username,
      password: fake.wsse.password,
    });
    const nonces = new Set<string>();
    for (let i = 0; i < 3; i++) {
      const res = await proxy(key, connectionId, '/api/v2/settings');
      expect(res.status).toBe(200);
      nonces.add((res.body as { nonce: string }).nonce);
    }
    expect(nonces.size).toBe(3);
  });

  it('OAUTH2_CC (Auth0-shaped): JSON body with the audience, an empty optional organization left out, the tenant host pinned', async () => {
    const key = await integration('fake-auth0-cc');
    const hostname = fake.url.replace('https://', '');
    const connectionId = await connected(
      key,
      'oauth2/auth',
      { client_id: fake.cc.clientId, client_secret: fake.cc.clientSecret },
      { hostname, audience: 'https://api.example.com/v2/' },
    );
    expect(fake.cc.requests.at(-1)).toEqual({
      route: 'auth0',
      params: {
        grant_type: 'client_credentials',
        audience: 'https://api.example.com/v2/',
        client_id: fake.cc.clientId,
        client_secret: fake.cc.clientSecret,
      },
    });
    expect(await proxiedToken(key, connectionId, '/whoami')).toBe(fake.cc.issued.at(-1));

    // Scopes the session set are asked for again when the token is renewed.
    const scoped = await connected(
      key,
      'oauth2/auth',
      { client_id: fake.cc.clientId, client_secret: fake.cc.clientSecret },
      { hostname, audience: 'https://api.example.com/v2/' },
      {
        integrations_config_defaults: {
          [key]: { connection_config: { oauth_scopes_override: 'read:users,read:logs' } },
        },
      },
    );
    expect(fake.cc.requests.at(-1)!.params['scope']).toBe('read:users read:logs');
    const forced = await call(
      stack.gatewayUrl,
      'GET',
      `/connections/${scoped}?provider_config_key=${key}&force_refresh=true`,
      { key: stack.secretKey },
    );
    expect(forced.status).toBe(200);
    expect(fake.cc.requests.at(-1)!.params['scope']).toBe('read:users read:logs');
    expect((forced.body as { credentials: { token: string } }).credentials.token).toBe(fake.cc.issued.at(-1));

    // The attack: a tenant host of the attacker's choosing would receive the client secret.
    const before = fake.cc.requests.length;
    const evil = await connectWith(
      key,
      'oauth2/auth',
      { client_id: fake.cc.clientId, client_secret: fake.cc.clientSecret },
      { hostname: 'evil.example', audience: 'https://api.example.com/v2/' },
    );
    expect(evil.status).toBe(400);
    expect(fake.cc.requests.length).toBe(before);
  });

  it('OAUTH2_CC (microsoft-oauth2-cc): the tenant in the token URL, scope=https://graph.microsoft.com/.default in a form body', async () => {
    const key = await integration('microsoft-oauth2-cc');
    const connectionId = await connected(
      key,
      'oauth2/auth',
      { client_id: fake.cc.clientId, client_secret: fake.cc.clientSecret },
      { tenantId: fake.cc.tenant },
    );
    expect(fake.cc.requests.at(-1)).toEqual({
      route: `ms:${fake.cc.tenant}`,
      params: {
        grant_type: 'client_credentials',
        scope: 'https://graph.microsoft.com/.default',
        client_id: fake.cc.clientId,
        client_secret: fake.cc.clientSecret,
      },
    });
    expect(await proxiedToken(key, connectionId, '/whoami')).toBe(fake.cc.issued.at(-1));
  });

  describe('every TWO_STEP provider of the catalog, against the fake its docs describe', () => {
    const connections = new Map<string, { key: string; connectionId: string }>();
    const expectTokenCall = (c: TwoStepCase, received: RecordedCall) => {
      expect({
        method: received.method,
        path: received.path,
        query: received.query,
        body: received.body,
      }).toEqual({
        method: c.token.method,
        path: c.token.path,
        query: c.token.query ?? {},
        body: c.token.body,
      });
      expect(received.headers).toMatchObject(c.token.headers ?? {});
    };
    /** The token exactly where the API takes it, the API's other headers, and no stray Authorization. */
    const expectApiCall = (c: TwoStepCase, received: RecordedCall, token: string) => {
      expect(presentedToken(c, received)).toBe(token);
      expect(received.headers).toMatchObject(c.api.headers ?? {});
      const inQuery = 'query' in c.api.token ? { [c.api.token.query]: token } : {};
      expect(received.query).toEqual({ ...c.api.query, ...inQuery });
      if (!('header' in c.api.token && c.api.token.header === 'authorization'))
        expect(received.headers.authorization).toBeUndefined();
    };

    it('each is described here or proven above', () => {
      expect(catalogTwoStepProviders().sort()).toEqual(
        [...TWO_STEP_CASES.map((c) => c.provider), ...TWO_STEP_PROVEN_ELSEWHERE].sort(),
      );
    });

    it.each(TWO_STEP_CASES.map((c) => [c.provider, c] as const))(
      '%s: connected with its form, the token call its docs describe, the token where its API takes it',
      async (provider, c) => {
        expect(realOrigins(c)).toEqual(c.origins);
        const key = await integration(provider);
        const connectionId = await connected(key, 'auth/two-step', c.credentials, c.params);
        connections.set(provider, { key, connectionId });
        const calls = twoStep.tokenCalls.get(provider) ?? [];
        expect(calls).toHaveLength(1);
        expectTokenCall(c, calls[0]!);

        const token = await proxiedToken(key, connectionId, proxiedEndpoint(c));
        expect(token).toBe(twoStep.issued.get(provider)![0]!.token);
        expectApiCall(c, twoStep.apiCalls.get(provider)!.at(-1)!, token);
      },
    );

    it('heymarket (JWT, HMAC): Bearer <HS256 JWT> whose iss is the API secret id, signed again once it ends', async () => {
      const key = await integration('heymarket');
      const connectionId = await connected(key, 'auth/jwt', {
        apiSecretId: HEYMARKET.secretId,
        apiSecretKey: HEYMARKET.secretKey,
      });
      const first = await proxiedToken(key, connectionId, HEYMARKET.path);
      const accepted = twoStep.heymarket.at(-1)!;
      expect(accepted.token).toBe(first);

      await pastRefreshPoint(accepted.exp * 1000);
      const second = await proxiedToken(key, connectionId, HEYMARKET.path);
      expect(second).not.toBe(first);
      expect(twoStep.heymarket.at(-1)!.token).toBe(second);
    });

    it('each token that ends is fetched again, with the same call, and the API gets the new one', async () => {
      const expiring = TWO_STEP_CASES.filter((c) => c.expiry !== 'none' && connections.has(c.provider));
      expect(expiring.length).toBeGreaterThan(0);
      // One wait for all of them: every first token was issued before this test began.
      await pastRefreshPoint(Math.max(...expiring.map((c) => twoStep.issued.get(c.provider)![0]!.expiresAt)));
      await Promise.all(
        expiring.map(async (c) => {
          const { key, connectionId } = connections.get(c.provider)!;
          const token = await proxiedToken(key, connectionId, proxiedEndpoint(c));
          const calls = twoStep.tokenCalls.get(c.provider)!;
          expect({ provider: c.provider, tokenCalls: calls.length }).toEqual({
            provider: c.provider,
            tokenCalls: 2,
          });
          expectTokenCall(c, calls[1]!);
          expect(token).toBe(twoStep.issued.get(c.provider)![1]!.token);
          expectApiCall(c, twoStep.apiCalls.get(c.provider)!.at(-1)!, token);
        }),
      );
    });
  });
});
