import { randomBytes, randomUUID } from 'node:crypto';
import { Nango } from '@nangohq/node';
import { freePort, startStack, type Stack } from '@switchboard/testing';
import aws4 from 'aws4';
import { launchChromium } from './support/chromium';
import { call, CookieJar, createKey, expectError } from './support/http';
import {
  makePki,
  removePki,
  startFakeHttpsProvider,
  type FakeHttpsProvider,
  type Pki,
  type RecordedRequest,
} from './support/provider-quirks-fakes';
import { CONNECT_SERVICES } from './support/connect-fakes/stack';
import { writeProvidersFile } from './support/providers-file';

/**
 * Catalog entries whose providers bend the usual protocols, driven through the gateway against fakes on
 * loopback that check what the real providers check: TikTok's renamed OAuth parameters and nested token
 * answers, and AWS Signature V4 on every proxied call. The built-in entries are used, with only their
 * hosts pointed at the fakes by an operator overrides file.
 */

const AWS_KEY_ID = 'AKIAQUIRKSTEST000001';
const AWS_SECRET = `aws-secret-${randomBytes(12).toString('hex')}`;

/** Recomputes the SigV4 signature of a request the way AWS does, with the secret the fake knows. */
function sigv4Valid(req: RecordedRequest, host: string): boolean {
  const authorization = String(req.headers.authorization ?? '');
  const match =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([a-z0-9-]+)\/([a-z0-9-]+)\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/.exec(
      authorization,
    );
  if (!match) return false;
  const [, keyId, , region, service, signedHeaders] = match;
  if (keyId !== AWS_KEY_ID || region !== 'us-east-1' || service !== 'iam') return false;
  const headers: Record<string, string> = {};
  for (const name of signedHeaders!.split(';')) {
    if (name === 'host') continue;
    headers[name] = String(req.headers[name] ?? '');
  }
  const expected = aws4.sign(
    {
      method: req.method,
      host,
      path: req.path,
      service: 'iam',
      region: 'us-east-1',
      headers,
      body: req.body,
    },
    { accessKeyId: AWS_KEY_ID, secretAccessKey: AWS_SECRET },
  );
  return expected.headers?.['Authorization'] === authorization;
}

jest.setTimeout(120_000);

describe('provider quirks: TikTok OAuth spellings and AWS SigV4', () => {
  let pki: Pki;
  let tiktok: FakeHttpsProvider;
  let aws: FakeHttpsProvider;
  let adpFake: FakeHttpsProvider;
  const adpTokens: string[] = [];
  let stack: Stack;
  let nango: Nango;
  const run = randomUUID().slice(0, 8);
  const accounts = `tiktok-accounts-${run}`;
  const ads = `tiktok-ads-${run}`;
  const iam = `aws-iam-${run}`;
  const adp = `adp-${run}`;
  const adpWithoutTls = `adp-plain-${run}`;
  const client = { id: `ck-${run}`, secret: `cs-${randomBytes(12).toString('hex')}` };
  let issued = 0;
  const tokens: string[] = [];
  const token = (prefix: string) => {
    const value = `${prefix}-${++issued}-${randomBytes(8).toString('hex')}`;
    tokens.push(value);
    return value;
  };

  beforeAll(async () => {
    pki = makePki();
    tiktok = await startFakeHttpsProvider(pki, (req) => {
      const json = () => JSON.parse(req.body || '{}') as Record<string, unknown>;
      if (req.method === 'POST' && req.path === '/open_api/v1.3/tt_user/oauth2/token/') {
        const body = json();
        // TikTok Business: JSON, the code as auth_code; no `code` at all.
        if (
          body['client_id'] !== client.id ||
          body['client_secret'] !== client.secret ||
          body['grant_type'] !== 'authorization_code' ||
          typeof body['auth_code'] !== 'string' ||
          'code' in body
        )
          return { status: 200, body: { code: 40001, message: 'invalid request', data: {} } };
        return {
          status: 200,
          body: {
            code: 0,
            message: 'OK',
            data: {
              access_token: token('act'),
              expires_in: 86400,
              refresh_token: token('rft'),
              refresh_token_expires_in: 31536000,
              open_id: `open-${run}`,
            },
          },
        };
      }
      if (req.method === 'POST' && req.path === '/open_api/v1.3/tt_user/oauth2/refresh_token/') {
        const body = json();
        if (
          body['client_id'] !== client.id ||
          body['grant_type'] !== 'refresh_token' ||
          body['refresh_token'] !== tokens.at(-1)
        )
          return { status: 200, body: { code: 40002, message: 'invalid refresh token', data: {} } };
        return {
          status: 200,
          body: {
            code: 0,
            message: 'OK',
            data: { access_token: token('act'), expires_in: 86400, refresh_token: token('rft') },
          },
        };
      }
      if (req.method === 'POST' && req.path === '/open_api/v1.3/oauth2/access_token/') {
        const body = json();
        // Marketing API: app_id and secret, the code as auth_code.
        if (body['app_id'] !== client.id || body['secret'] !== client.secret || !body['auth_code'])
          return { status: 200, body: { code: 40001, message: 'invalid request', data: {} } };
        return {
          status: 200,
          body: {
            code: 0,
            message: 'OK',
            data: { access_token: token('ads'), advertiser_ids: ['1'], scope: [1] },
          },
        };
      }
      if (req.method === 'GET' && req.path.startsWith('/open_api/v1.3/user/info/')) {
        const presented = String(req.headers['access-token'] ?? '');
        if (
          presented === '' ||
          presented !== tokens.filter((t) => t.startsWith('act') || t.startsWith('ads')).at(-1)
        )
          return { status: 401, body: { code: 40105, message: 'access token invalid' } };
        return { status: 200, body: { code: 0, data: { display_name: 'Quirk' } } };
      }
      return undefined;
    });
    aws = await startFakeHttpsProvider(pki, (req) => {
      const host = new URL(aws.url).host;
      if (!sigv4Valid(req, host)) return { status: 403, body: { Error: { Code: 'SignatureDoesNotMatch' } } };
      return { status: 200, body: { GetUserResponse: { GetUserResult: { User: { UserName: 'quirk' } } } } };
    });

    adpFake = await startFakeHttpsProvider(
      pki,
      (req) => {
        if (req.method === 'POST' && req.path === '/auth/oauth/v2/token') {
          const form = new URLSearchParams(req.body);
          if (
            form.get('grant_type') !== 'client_credentials' ||
            form.get('client_id') !== client.id ||
            form.get('client_secret') !== client.secret
          )
            return { status: 401, body: { error: 'invalid_client' } };
          const issuedToken = `adp-${adpTokens.length + 1}-${randomBytes(8).toString('hex')}`;
          adpTokens.push(issuedToken);
          return { status: 200, body: { access_token: issuedToken, token_type: 'Bearer', expires_in: 3600 } };
        }
        if (req.method === 'GET' && req.path === '/hr/v2/workers') {
          if (req.headers.authorization !== `Bearer ${adpTokens.at(-1)}`)
            return { status: 401, body: { error: 'invalid_token' } };
          return { status: 200, body: { workers: [{ associateOID: 'G3' }] } };
        }
        return undefined;
      },
      { requireClientCertificate: true },
    );

    const providersFile = writeProvidersFile(
      [
        'tiktok-accounts:',
        '  alias: tiktok-accounts',
        `  authorization_url: ${tiktok.url}/v2/auth/authorize/`,
        `  token_url: ${tiktok.url}/open_api/v1.3/tt_user/oauth2/token/`,
        `  refresh_url: ${tiktok.url}/open_api/v1.3/tt_user/oauth2/refresh_token/`,
        '  proxy:',
        `    base_url: ${tiktok.url}/open_api/v1.3/`,
        '    headers:',
        '      access-token: ${accessToken}',
        'tiktok-ads:',
        '  alias: tiktok-ads',
        `  authorization_url: ${tiktok.url}/portal/auth`,
        `  token_url: ${tiktok.url}/open_api/v1.3/oauth2/access_token/`,
        '  proxy:',
        `    base_url: ${tiktok.url}/open_api/v1.3/`,
        '    headers:',
        '      access-token: ${accessToken}',
        'adp:',
        '  alias: adp',
        `  token_url: ${adpFake.url}/auth/oauth/v2/token`,
        '  proxy:',
        `    base_url: ${adpFake.url}`,
        // The same provider without mutual TLS: what happens when no certificate is presented.
        'adp-plain:',
        '  display_name: ADP without mutual TLS',
        '  categories: [hr]',
        '  docs: https://example.com/docs/adp-plain',
        '  auth_mode: OAUTH2_CC',
        `  token_url: ${adpFake.url}/auth/oauth/v2/token`,
        '  proxy:',
        `    base_url: ${adpFake.url}`,
        'aws-iam:',
        '  alias: aws-iam',
        '  proxy:',
        `    base_url: ${aws.url}`,
        '    aws_sigv4:',
        '      service: iam',
        '      region: us-east-1',
        '',
      ].join('\n'),
    );
    const connectPort = await freePort();
    stack = await startStack({
      services: CONNECT_SERVICES,
      env: {
        SWITCHBOARD_CONNECT_URL: `http://127.0.0.1:${connectPort}`,
        SWITCHBOARD_PROVIDERS_FILE: providersFile,
        NODE_EXTRA_CA_CERTS: pki.caFile,
        SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1',
      },
      readyTimeoutMs: 4 * 60_000,
      serviceEnv: { 'auth-connect': { CONNECT_PORT: String(connectPort), CONNECT_HOST: '127.0.0.1' } },
    });
    nango = new Nango({ secretKey: stack.secretKey, host: stack.gatewayUrl });
    for (const [provider, key] of [
      ['tiktok-accounts', accounts],
      ['tiktok-ads', ads],
    ] as const) {
      await nango.createIntegration({
        provider,
        unique_key: key,
        credentials: {
          type: 'OAUTH2',
          client_id: client.id,
          client_secret: client.secret,
          scopes: 'user.info.basic,video.list',
        },
      });
    }
    await nango.createIntegration({ provider: 'aws-iam', unique_key: iam });
    await nango.createIntegration({ provider: 'adp', unique_key: adp });
    await nango.createIntegration({ provider: 'adp-plain', unique_key: adpWithoutTls });
  }, 5 * 60_000);

  afterAll(async () => {
    await stack?.stop();
    await tiktok?.stop();
    await aws?.stop();
    await adpFake?.stop();
    if (pki) removePki(pki);
  });

  /** Starts the OAuth flow the connect page would, returns the provider authorization URL and the browser. */
  const authorize = async (integration: string) => {
    const session = await call(stack.gatewayUrl, 'POST', '/connect/sessions', {
      key: stack.secretKey,
      body: { end_user: { id: `user-${run}` }, allowed_integrations: [integration] },
    });
    expect(session.status).toBe(201);
    const sessionToken = (session.body as { data: { token: string } }).data.token;
    const res = await fetch(
      `${stack.gatewayUrl}/oauth/connect/${integration}?connect_session_token=${sessionToken}`,
      { redirect: 'manual' },
    );
    expect(res.status).toBe(302);
    const browser = new CookieJar().take(res);
    return { url: new URL(res.headers.get('location')!), browser };
  };
  /** The provider's redirect back with a code; returns the new connection id. */
  const callback = async (state: string, browser: CookieJar, code: string) => {
    const page = await fetch(`${stack.gatewayUrl}/oauth/callback?state=${state}&code=${code}`, {
      headers: browser.headers(),
    });
    const html = await page.text();
    expect(html).toContain('nango_oauth_callback_success');
    return /"connectionId":"([^"]+)"/.exec(html)![1]!;
  };

  it('TikTok Accounts: client_key in the authorization URL, auth_code in the token call, the token read from data; proxy and refresh work', async () => {
    const { url, browser } = await authorize(accounts);
    expect(url.origin + url.pathname).toBe(`${tiktok.url}/v2/auth/authorize/`);
    expect(url.searchParams.get('client_key')).toBe(client.id);
    expect(url.searchParams.has('client_id')).toBe(false);
    expect(url.searchParams.get('scope')).toBe('user.info.basic,video.list');

    const connectionId = await callback(url.searchParams.get('state')!, browser, `code-${run}`);
    const tokenCall = tiktok.requests.find((r) => r.path.endsWith('/tt_user/oauth2/token/'))!;
    expect(JSON.parse(tokenCall.body)).toEqual({
      grant_type: 'authorization_code',
      auth_code: `code-${run}`,
      redirect_uri: `${stack.gatewayUrl}/oauth/callback`,
      client_id: client.id,
      client_secret: client.secret,
    });
    const connection = await nango.getConnection(accounts, connectionId);
    const first = (connection.credentials as { access_token: string }).access_token;
    expect(first).toMatch(/^act-/);
    expect(connection.credentials).toMatchObject({ type: 'OAUTH2' });

    const proxied = await nango.get({ providerConfigKey: accounts, connectionId, endpoint: '/user/info/' });
    expect(proxied.status).toBe(200);
    expect(tiktok.requests.at(-1)!.headers['access-token']).toBe(first);

    const refreshed = await nango.getConnection(accounts, connectionId, true);
    const second = (refreshed.credentials as { access_token: string }).access_token;
    expect(second).toMatch(/^act-/);
    expect(second).not.toBe(first);
    const refreshCall = tiktok.requests.find((r) => r.path.endsWith('/tt_user/oauth2/refresh_token/'))!;
    expect(JSON.parse(refreshCall.body)).toMatchObject({ grant_type: 'refresh_token', client_id: client.id });
    const again = await nango.get({ providerConfigKey: accounts, connectionId, endpoint: '/user/info/' });
    expect(again.status).toBe(200);
    // The proxy may still hold the old token for a moment; then the provider's 401 makes it refresh again.
    const current = await nango.getConnection(accounts, connectionId);
    const latest = (current.credentials as { access_token: string }).access_token;
    expect(latest).not.toBe(first);
    expect(tiktok.requests.at(-1)!.headers['access-token']).toBe(latest);
  });

  it('TikTok Ads: app_id in the authorization URL, app_id / secret / auth_code in the token call, only Access-Token on the API', async () => {
    const { url, browser } = await authorize(ads);
    expect(url.origin + url.pathname).toBe(`${tiktok.url}/portal/auth`);
    expect(url.searchParams.get('app_id')).toBe(client.id);
    expect(url.searchParams.has('client_id')).toBe(false);

    const connectionId = await callback(url.searchParams.get('state')!, browser, `ads-code-${run}`);
    const tokenCall = tiktok.requests.find((r) => r.path === '/open_api/v1.3/oauth2/access_token/')!;
    expect(JSON.parse(tokenCall.body)).toMatchObject({
      app_id: client.id,
      secret: client.secret,
      auth_code: `ads-code-${run}`,
    });
    expect(JSON.parse(tokenCall.body)).not.toHaveProperty('client_secret');
    const connection = await nango.getConnection(ads, connectionId);
    const token = (connection.credentials as { access_token: string }).access_token;
    expect(token).toMatch(/^ads-/);

    // The Marketing API takes the token in Access-Token only: no Authorization header rides along.
    const proxied = await nango.get({ providerConfigKey: ads, connectionId, endpoint: '/user/info/' });
    expect(proxied.status).toBe(200);
    const upstream = tiktok.requests.at(-1)!;
    expect(upstream.path).toBe('/open_api/v1.3/user/info/');
    expect(upstream.headers['access-token']).toBe(token);
    expect(upstream.headers).not.toHaveProperty('authorization');
  });

  it('AWS IAM: every proxied call carries a SigV4 signature the provider recomputes, GET and form POST', async () => {
    const imported = await call(stack.gatewayUrl, 'POST', '/connections', {
      key: stack.secretKey,
      body: {
        provider_config_key: iam,
        connection_id: `iam-${run}`,
        credentials: { type: 'BASIC', username: AWS_KEY_ID, password: AWS_SECRET },
      },
    });
    expect(imported.status).toBe(201);
    const get = await nango.get({
      providerConfigKey: iam,
      connectionId: `iam-${run}`,
      endpoint: '/?Action=GetUser&Version=2010-05-08',
    });
    expect(get.status).toBe(200);
    const signed = aws.requests.at(-1)!;
    expect(signed.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIAQUIRKSTEST000001\//);
    expect(signed.headers['x-amz-date']).toMatch(/^\d{8}T\d{6}Z$/);
    expect(JSON.stringify(signed.headers)).not.toContain(AWS_SECRET);

    const post = await nango.post({
      providerConfigKey: iam,
      connectionId: `iam-${run}`,
      endpoint: '/',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      data: 'Action=ListUsers&Version=2010-05-08',
    });
    expect(post.status).toBe(200);
    expect(aws.requests.at(-1)!.body).toBe('Action=ListUsers&Version=2010-05-08');

    // A wrong secret yields a signature the provider refuses: the fake really checks.
    const forged = await call(stack.gatewayUrl, 'POST', '/connections', {
      key: stack.secretKey,
      body: {
        provider_config_key: iam,
        connection_id: `iam-forged-${run}`,
        credentials: { type: 'BASIC', username: AWS_KEY_ID, password: 'not-the-secret' },
      },
    });
    expect(forged.status).toBe(201);
    const refused = await fetch(`${stack.gatewayUrl}/proxy/?Action=GetUser&Version=2010-05-08`, {
      headers: {
        authorization: `Bearer ${stack.secretKey}`,
        'connection-id': `iam-forged-${run}`,
        'provider-config-key': iam,
      },
    });
    expect(refused.status).toBe(403);
  });

  it('ADP: a checked client certificate is presented to the token endpoint and on proxied calls, and stays with the connection', async () => {
    const session = async (integration: string) => {
      const res = await call(stack.gatewayUrl, 'POST', '/connect/sessions', {
        key: stack.secretKey,
        body: { end_user: { id: `adp-user-${run}` }, allowed_integrations: [integration] },
      });
      expect(res.status).toBe(201);
      return (res.body as { data: { token: string } }).data.token;
    };
    const submit = async (integration: string, body: Record<string, string>) =>
      call(
        stack.gatewayUrl,
        'POST',
        `/oauth2/auth/${integration}?connect_session_token=${encodeURIComponent(await session(integration))}`,
        { body },
      );

    // The fake really refuses a handshake without a certificate from its CA.
    await expect(fetch(`${adpFake.url}/hr/v2/workers`)).rejects.toThrow();
    // Without mutual TLS the token call cannot even be made.
    const plain = await submit(adpWithoutTls, { client_id: client.id, client_secret: client.secret });
    expect(plain.status).toBeGreaterThanOrEqual(400);
    expect(plain.status).toBeLessThan(600);
    expect(adpFake.requests).toHaveLength(0);
    // A certificate is required up front: a clear 400, nothing sent.
    const missing = await submit(adp, { client_id: client.id, client_secret: client.secret });
    expect(missing.status).toBe(400);
    expect((missing.body as { error: { code: string; message: string } }).error).toMatchObject({
      code: 'invalid_body',
      message: expect.stringContaining('client_certificate'),
    });
    expect(adpFake.requests).toHaveLength(0);
    // PEM-shaped text that is no certificate, and a key of another certificate: each named, never quoted.
    const garbled = await submit(adp, {
      client_id: client.id,
      client_secret: client.secret,
      client_certificate: '-----BEGIN CERTIFICATE-----\nTm90QUNlcnRpZmljYXRl\n-----END CERTIFICATE-----',
      client_private_key: pki.clientKey,
    });
    expect(expectError(garbled, 400, 'invalid_body').message).toBe(
      'ADP needs mutual TLS: client_certificate is not a readable X.509 certificate',
    );
    const mismatched = await submit(adp, {
      client_id: client.id,
      client_secret: client.secret,
      client_certificate: pki.clientCert,
      client_private_key: pki.serverKey,
    });
    expect(expectError(mismatched, 400, 'invalid_body').message).toBe(
      'ADP needs mutual TLS: client_private_key does not belong to client_certificate',
    );
    expect(mismatched.text).not.toContain(pki.serverKey.split('\n')[1]!);
    expect(adpFake.requests).toHaveLength(0);

    // Pasted into the connect page's one-line password fields, the pair loses its line breaks: still fine.
    const ok = await submit(adp, {
      client_id: client.id,
      client_secret: client.secret,
      client_certificate: pki.clientCert.replace(/\n/g, ' '),
      client_private_key: pki.clientKey.replace(/\n/g, ' '),
    });
    expect(ok.status).toBe(200);
    expect(ok.text).not.toContain('PRIVATE KEY');
    const { connectionId } = ok.body as { connectionId: string };
    expect(adpFake.requests.at(-1)).toMatchObject({ path: '/auth/oauth/v2/token', clientCertificate: true });

    const workers = await nango.get({ providerConfigKey: adp, connectionId, endpoint: '/hr/v2/workers' });
    expect(workers.status).toBe(200);
    expect(adpFake.requests.at(-1)).toMatchObject({ path: '/hr/v2/workers', clientCertificate: true });

    // A refresh asks for a new token with the stored certificate, and the proxy uses the new token.
    const refreshed = await nango.getConnection(adp, connectionId, true);
    expect(refreshed.credentials).toMatchObject({ type: 'OAUTH2_CC', token: adpTokens.at(-1) });
    expect(adpTokens).toHaveLength(2);
    expect(
      adpFake.requests.filter((r) => r.path === '/auth/oauth/v2/token').every((r) => r.clientCertificate),
    ).toBe(true);
    const again = await nango.get({ providerConfigKey: adp, connectionId, endpoint: '/hr/v2/workers' });
    expect(again.status).toBe(200);

    // The certificate and key are credentials: a key without read_credentials does not see them.
    const reader = await createKey(stack.gatewayUrl, stack.secretKey, ['environment:connections:read']);
    const view = await call(
      stack.gatewayUrl,
      'GET',
      `/connections/${connectionId}?provider_config_key=${adp}`,
      {
        key: reader,
      },
    );
    expect(view.status).toBe(200);
    expect(view.text).not.toContain('PRIVATE KEY');
    expect(view.text).not.toContain('BEGIN CERTIFICATE');
  });

  it('ADP through the connect page in Chromium: write-only certificate and key fields, a bad one refused, then a proxied call', async () => {
    const session = await call(stack.gatewayUrl, 'POST', '/connect/sessions', {
      key: stack.secretKey,
      body: { end_user: { id: `adp-page-${run}` }, allowed_integrations: [adp] },
    });
    expect(session.status).toBe(201);
    const link = (session.body as { data: { connect_link: string } }).data.connect_link;
    const tokenCalls = () => adpFake.requests.filter((r) => r.path === '/auth/oauth/v2/token').length;
    const before = tokenCalls();
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      await page.goto(link);
      await page.getByLabel(/Client ID/).fill(client.id);
      await page.getByLabel(/Client secret/).fill(client.secret);
      const certificate = page.getByLabel(/Client certificate/);
      const privateKey = page.getByLabel(/Client private key/);
      expect(await certificate.getAttribute('type')).toBe('password');
      expect(await privateKey.getAttribute('type')).toBe('password');
      // A key of another certificate: the page shows why, and nothing reaches ADP.
      await certificate.fill(pki.clientCert);
      await privateKey.fill(pki.serverKey);
      await page.getByRole('button', { name: 'Connect', exact: true }).click();
      await page.waitForSelector('#form-error:has-text("does not belong to client_certificate")');
      expect(tokenCalls()).toBe(before);

      await privateKey.fill(pki.clientKey);
      await page.getByRole('button', { name: 'Connect', exact: true }).click();
      await page.waitForSelector('h1:has-text("is connected")');
    } finally {
      await browser.close();
    }
    const list = await call(stack.gatewayUrl, 'GET', `/connections?integrationId=${adp}`, {
      key: stack.secretKey,
    });
    const connection = (
      list.body as { connections: { connection_id: string; end_user?: { id: string } }[] }
    ).connections.find((c) => c.end_user?.id === `adp-page-${run}`);
    expect(connection).toBeDefined();
    expect(adpFake.requests.at(-1)).toMatchObject({ path: '/auth/oauth/v2/token', clientCertificate: true });
    const workers = await nango.get({
      providerConfigKey: adp,
      connectionId: connection!.connection_id,
      endpoint: '/hr/v2/workers',
    });
    expect(workers.status).toBe(200);
    expect(adpFake.requests.at(-1)).toMatchObject({ path: '/hr/v2/workers', clientCertificate: true });
  });
});
