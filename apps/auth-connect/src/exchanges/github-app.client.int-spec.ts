import { createVerify, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ResolvedProvider } from '@switchboard/providers';
import { LoopbackHttpFake, requestBody } from '@switchboard/testing';
import { ProviderExchangeError } from './exchange.errors';
import {
  createGithubAppJwt,
  exchangeGithubAppInstallation,
  exchangeGithubAppOAuth,
  fetchInstallationToken,
  refreshGithubAppOAuth,
} from './github-app.client';
import { closeProviderEgress, configureProviderEgress } from './provider-egress';

const unexpected = (): never => {
  throw new Error('expected the call to fail');
};

const APP_ID = '123456';
const INSTALLATION_ID = '987654';

/**
 * A fake GitHub: it verifies the app JWT with the app's public key (node:crypto, RS256) and GitHub's own
 * rules (iss = app id, issued in the past, expiring at most 10 minutes ahead) before issuing an
 * installation token, and runs the user OAuth code exchange of a GitHub App.
 */
class FakeGithub extends LoopbackHttpFake {
  readonly installationCalls: { installation: string; accept?: string; apiVersion?: string }[] = [];
  userTokenCalls = 0;
  installationListCalls = 0;
  /** User token → the installations that user can see (GET /user/installations). */
  private readonly visible = new Map<string, string[]>();

  constructor(private readonly publicKey: KeyObject) {
    super();
  }

  protected async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await requestBody(req);
    const url = new URL(req.url ?? '/', this.url);
    const send = (status: number, json: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(json));
    };

    const installation = /^\/app\/installations\/(\d+)\/access_tokens$/.exec(url.pathname);
    if (installation && req.method === 'POST') {
      const problem = this.checkJwt(req.headers.authorization);
      if (problem) return send(401, { message: problem, documentation_url: 'https://docs.github.com/rest' });
      if (installation[1] !== INSTALLATION_ID) return send(404, { message: 'Not Found' });
      this.installationCalls.push({
        installation: installation[1]!,
        ...(req.headers.accept ? { accept: req.headers.accept } : {}),
        ...(typeof req.headers['x-github-api-version'] === 'string'
          ? { apiVersion: req.headers['x-github-api-version'] }
          : {}),
      });
      return send(201, {
        token: `ghs_${randomBytes(8).toString('hex')}`,
        expires_at: new Date(Date.now() + 3600_000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
        permissions: { contents: 'read' },
        repository_selection: 'all',
      });
    }
    if (url.pathname === '/user/installations' && req.method === 'GET') {
      this.installationListCalls += 1;
      const token = req.headers.authorization?.replace(/^Bearer /, '') ?? '';
      const ids = this.visible.get(token);
      if (!ids) return send(401, { message: 'Bad credentials' });
      return send(200, { total_count: ids.length, installations: ids.map((id) => ({ id: Number(id) })) });
    }
    if (url.pathname === '/login/oauth/access_token') {
      this.userTokenCalls += 1;
      const fields = Object.fromEntries(new URLSearchParams(body));
      if (fields['client_secret'] !== 'gh-client-secret')
        return send(200, { error: 'incorrect_client_credentials' });
      if (fields['grant_type'] === 'refresh_token' && fields['refresh_token'] !== 'ghr_1')
        return send(200, { error: 'bad_refresh_token' });
      const accessToken = `ghu_${randomBytes(6).toString('hex')}`;
      // "stranger-code" is another GitHub user's authorization: they see only their own installation.
      this.visible.set(accessToken, fields['code'] === 'stranger-code' ? ['111'] : [INSTALLATION_ID]);
      return send(200, {
        access_token: accessToken,
        refresh_token: 'ghr_1',
        expires_in: 28800,
        token_type: 'bearer',
      });
    }
    send(404, { message: 'Not Found' });
  }

  private checkJwt(authorization: string | undefined): string | undefined {
    const jwt = authorization?.replace(/^Bearer /, '') ?? '';
    const [header, payload, signature] = jwt.split('.');
    if (!header || !payload || !signature) return 'A JSON web token could not be decoded';
    const valid = createVerify('RSA-SHA256')
      .update(`${header}.${payload}`)
      .verify(this.publicKey, Buffer.from(signature, 'base64url'));
    if (!valid) return 'A JSON web token could not be decoded';
    const head = JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as { alg?: string };
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as {
      iss?: unknown;
      iat?: number;
      exp?: number;
    };
    const now = Math.floor(Date.now() / 1000);
    if (head.alg !== 'RS256') return 'alg must be RS256';
    if (String(claims.iss) !== APP_ID) return 'Integration not found';
    if (typeof claims.iat !== 'number' || claims.iat > now)
      return "'Issued at' claim ('iat') must be an Integer representing a time in the past";
    if (typeof claims.exp !== 'number' || claims.exp <= now || claims.exp - now > 600) {
      return "'Expiration time' claim ('exp') is too far in the future";
    }
    return undefined;
  }
}

// RSA key generation is slow on a loaded 2-core machine.
jest.setTimeout(20_000);

describe('GitHub App client against a fake GitHub', () => {
  const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  // GitHub hands out PKCS#1 keys ("BEGIN RSA PRIVATE KEY").
  const privateKey = keys.privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  const github = new FakeGithub(keys.publicKey);
  let appProvider: ResolvedProvider;
  let customProvider: ResolvedProvider;

  beforeAll(async () => {
    configureProviderEgress('127.0.0.1'); // the fake provider listens on loopback
    await github.start();
    appProvider = {
      name: 'github-app',
      display_name: 'GitHub (App)',
      categories: ['dev-tools'],
      docs: 'https://example.com/docs',
      auth_mode: 'APP',
      token_url: `${github.url}/app/installations/\${connectionConfig.installation_id}/access_tokens`,
      installation_check: {
        token_url: `${github.url}/login/oauth/access_token`,
        installations_url: `${github.url}/user/installations`,
      },
    } as ResolvedProvider;
    customProvider = {
      name: 'github-app-oauth',
      display_name: 'GitHub (App OAuth)',
      categories: ['dev-tools'],
      docs: 'https://example.com/docs',
      auth_mode: 'CUSTOM',
      authorization_url: `${github.url}/login/oauth/authorize`,
      token_url: `${github.url}/login/oauth/access_token`,
      proxy: { base_url: github.url },
    } as ResolvedProvider;
  });
  afterAll(async () => {
    await github.stop();
    await closeProviderEgress();
  });

  it('signs an app JWT that GitHub accepts: RS256, iss = app id, iat back-dated, exp within 10 minutes', async () => {
    const now = new Date();
    const jwt = await createGithubAppJwt({ appId: APP_ID, privateKey }, now);
    const claims = JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8')) as {
      iss: string;
      iat: number;
      exp: number;
    };
    const seconds = Math.floor(now.getTime() / 1000);
    expect(claims).toEqual({ iss: APP_ID, iat: seconds - 60, exp: seconds + 540 });
  });

  it('trades the app JWT for an installation token (APP credentials)', async () => {
    const { credentials } = await fetchInstallationToken({
      provider: appProvider,
      appId: APP_ID,
      privateKey,
      connectionConfig: { installation_id: INSTALLATION_ID },
    });
    expect(credentials).toMatchObject({
      type: 'APP',
      access_token: expect.stringMatching(/^ghs_/),
      raw: { repository_selection: 'all' },
    });
    expect(new Date(credentials.expires_at!).getTime()).toBeGreaterThan(Date.now() + 50 * 60_000);
    expect(credentials.jwtToken).toBeUndefined();
    expect(github.installationCalls.at(-1)).toEqual({
      installation: INSTALLATION_ID,
      accept: 'application/vnd.github+json',
      apiVersion: '2022-11-28',
    });
  });

  it('includes the app JWT when asked (refresh_github_app_jwt_token)', async () => {
    const { credentials } = await fetchInstallationToken({
      provider: appProvider,
      appId: APP_ID,
      privateKey,
      connectionConfig: { installation_id: INSTALLATION_ID },
      includeJwt: true,
    });
    expect(credentials.jwtToken?.split('.')).toHaveLength(3);
  });

  it('is refused when the JWT is signed with another key', async () => {
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 })
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString();
    const error = await fetchInstallationToken({
      provider: appProvider,
      appId: APP_ID,
      privateKey: other,
      connectionConfig: { installation_id: INSTALLATION_ID },
    }).then(unexpected, (e: unknown) => e as ProviderExchangeError);
    expect(error).toBeInstanceOf(ProviderExchangeError);
    expect(error).toMatchObject({
      code: 'invalid_credentials',
      details: { stage: 'app_installation_token', providerStatus: 401 },
    });
    expect(error.logDetail).toContain('could not be decoded');
  });

  it('refuses an installation id that is not a number before calling GitHub', async () => {
    const calls = github.installationCalls.length;
    const error = await fetchInstallationToken({
      provider: appProvider,
      appId: APP_ID,
      privateKey,
      connectionConfig: { installation_id: '1/../../users' },
    }).then(unexpected, (e: unknown) => e as ProviderExchangeError);
    expect(error).toMatchObject({ code: 'invalid_connection', details: { failure: 'misconfigured' } });
    expect(github.installationCalls.length).toBe(calls);
  });

  it('does not echo an unreadable private key', async () => {
    const error = await createGithubAppJwt({
      appId: APP_ID,
      privateKey: 'not-a-key-but-a-secret-value',
    }).then(unexpected, (e: unknown) => e as Error);
    expect(error).toBeInstanceOf(ProviderExchangeError);
    expect(error.message).not.toContain('not-a-key-but-a-secret-value');
  });

  it('builds CUSTOM credentials from the user code and the installation, and refreshes both', async () => {
    const client = { clientId: 'Iv1.client', clientSecret: 'gh-client-secret' };
    const { credentials } = await exchangeGithubAppOAuth({
      provider: customProvider,
      client,
      appId: APP_ID,
      privateKey,
      code: 'user-code',
      redirectUri: 'https://switchboard.example/oauth/callback',
      connectionConfig: { installation_id: INSTALLATION_ID },
    });
    expect(credentials).toMatchObject({
      type: 'CUSTOM',
      app: { access_token: expect.stringMatching(/^ghs_/) },
      user: { access_token: expect.stringMatching(/^ghu_/), refresh_token: 'ghr_1' },
    });
    expect(credentials.app).not.toHaveProperty('type');

    const before = { user: github.userTokenCalls, app: github.installationCalls.length };
    const refreshed = await refreshGithubAppOAuth({
      provider: customProvider,
      client,
      appId: APP_ID,
      privateKey,
      credentials,
      connectionConfig: { installation_id: INSTALLATION_ID },
    });
    expect(github.userTokenCalls).toBe(before.user + 1);
    expect(github.installationCalls.length).toBe(before.app + 1);
    expect(refreshed.credentials.app.access_token).not.toBe(credentials.app.access_token);
    expect(refreshed.credentials.user?.access_token).not.toBe(credentials.user?.access_token);
  });

  describe('installation check: the installation_id of a redirect is only a claim', () => {
    const client = { clientId: 'Iv1.client', clientSecret: 'gh-client-secret' };
    const common = {
      client,
      appId: APP_ID,
      privateKey,
      redirectUri: 'https://switchboard.example/oauth/callback',
      connectionConfig: { installation_id: INSTALLATION_ID },
    };

    it('APP: mints an installation token once the installing user can see the installation', async () => {
      const before = github.installationListCalls;
      const { credentials } = await exchangeGithubAppInstallation({
        ...common,
        provider: appProvider,
        code: 'user-code',
      });
      expect(credentials).toMatchObject({ type: 'APP', access_token: expect.stringMatching(/^ghs_/) });
      expect(github.installationListCalls).toBe(before + 1);
    });

    it.each([
      [
        'APP',
        () => exchangeGithubAppInstallation({ ...common, provider: appProvider, code: 'stranger-code' }),
      ],
      [
        'CUSTOM',
        () => exchangeGithubAppOAuth({ ...common, provider: customProvider, code: 'stranger-code' }),
      ],
    ])(
      '%s: refuses an installation the user token cannot see, before any installation token',
      async (_mode, run) => {
        const minted = github.installationCalls.length;
        const error = (await run().then(unexpected, (e: unknown) => e)) as ProviderExchangeError;
        expect(error).toBeInstanceOf(ProviderExchangeError);
        expect(error.details).toMatchObject({ stage: 'app_installation_check', failure: 'rejected' });
        expect(error.message).toContain(`cannot see installation ${INSTALLATION_ID}`);
        expect(github.installationCalls.length).toBe(minted);
      },
    );
  });
});
