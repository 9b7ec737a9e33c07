import { createHash, createVerify, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { serveLoopbackHttps } from '@switchboard/testing';

/**
 * A fake third-party provider for the connect flows, on loopback over HTTPS (the catalog accepts only
 * https:// URLs; services trust its throwaway certificate through NODE_EXTRA_CA_CERTS):
 *
 * - OAuth 2 authorization code with PKCE: `GET /{tenant}/authorize` checks the client, the redirect URI,
 *   an S256 challenge and a state, then redirects straight back (no consent screen: it "auto-approves"),
 *   except for the tenant `consent-screen`, whose consent screen never answers.
 *   `POST /{tenant}/token` accepts each code once, only with the client's secret, the same redirect URI and
 *   a `code_verifier` whose SHA-256 is the challenge.
 * - An API-key verification endpoint, `GET /v1/me`, that answers 200 only to `x-api-key: <the good key>`.
 * - A Clerk-like `GET /v1/instance` that names the instance a secret key belongs to: `Bearer sk_test_<name>`
 *   is instance `ins_<name>`; any other key is refused with an answer that quotes it back.
 */
export interface ConnectFakeProvider {
  url: string;
  caFile: string;
  clientId: string;
  clientSecret: string;
  goodApiKey: string;
  /** Every authorization request, as the provider received its query. */
  authorizeRequests: URLSearchParams[];
  /** Token requests and what the provider decided about each. */
  tokenRequests: { params: URLSearchParams; outcome: 'issued' | string }[];
  /** API keys presented to the verification endpoint. */
  verificationKeys: string[];
  /** Access tokens issued, in order. */
  accessTokens: string[];
  /** Client-credentials tokens issued. */
  clientCredentialTokens: string[];
  /** Installation tokens issued to a correctly signed app JWT. */
  installationTokens: string[];
  /** Installation ids an installation token was asked for (signed or not). */
  installationTokenRequests: string[];
  /** Installation lists served to a GitHub-style user token (`GET /gh/user/installations`). */
  installationChecks: number;
  /** GitHub-style user codes exchanged at `/gh/login/oauth/access_token`, with what the fake decided. */
  githubCodeExchanges: { code: string; outcome: string }[];
  /**
   * Who is signed in at the fake GitHub for the next install or authorization: `acme` (default) sees
   * installation 4242, `victim` sees 5151.
   */
  actAs(user: GithubUser): void;
  /** Access tokens that asked `GET /v1/account` which account they belong to (a post-connect call). */
  accountLookups: string[];
  /** API keys that asked `GET /v1/instance` which instance they belong to (a post-connect call). */
  instanceLookups: string[];
  /** Where the fake GitHub-style app install sends the browser back (the app's "Setup URL"). */
  setAppSetupUrl(url: string, appPublicKey: string): void;
  /** A GET to the fake from the test itself (trusting its certificate): the status and the redirect target. */
  get(url: URL | string): Promise<{ status: number; location: string | undefined }>;
  stop(): Promise<void>;
}

export type GithubUser = 'acme' | 'victim';
const GITHUB_INSTALLATIONS: Record<GithubUser, number> = { acme: 4242, victim: 5151 };

interface PendingCode {
  challenge: string;
  redirectUri: string;
  tenant: string;
}

export async function startConnectFakeProvider(): Promise<ConnectFakeProvider> {
  const clientId = `client-${randomBytes(4).toString('hex')}`;
  const clientSecret = `secret-${randomBytes(12).toString('hex')}`;
  const goodApiKey = `key-${randomBytes(12).toString('hex')}`;
  const codes = new Map<string, PendingCode>();
  const authorizeRequests: URLSearchParams[] = [];
  const tokenRequests: { params: URLSearchParams; outcome: string }[] = [];
  const verificationKeys: string[] = [];
  const accessTokens: string[] = [];
  const clientCredentialTokens: string[] = [];
  const installationTokens: string[] = [];
  const installationTokenRequests: string[] = [];
  const accountLookups: string[] = [];
  const instanceLookups: string[] = [];
  /** Access token → the tenant whose code it was issued for: its account is `portal-<tenant>`. */
  const tokenTenants = new Map<string, string>();
  let installationChecks = 0;
  /**
   * GitHub-style user codes (with the PKCE challenge of the authorization that issued them, if any) and
   * user tokens, each for one user. As RFC 9700 asks of a server, a code issued without a challenge is
   * refused when a verifier comes with it.
   */
  const githubCodes = new Map<string, { user: GithubUser; challenge?: string; redirectUri?: string }>();
  const githubUserTokens = new Map<string, GithubUser>();
  const githubCodeExchanges: { code: string; outcome: string }[] = [];
  let githubUser: GithubUser = 'acme';
  let appSetupUrl: string | undefined;
  let appPublicKey: string | undefined;

  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    res.end(JSON.stringify(body));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'https://127.0.0.1');
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');

    if (req.method === 'GET' && url.pathname === '/v1/account') {
      const accessToken = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
      const tenant = tokenTenants.get(accessToken);
      if (!tenant) return json(res, 401, { error: 'invalid_token' });
      // Like Squarespace's User-Agent: a header the catalog fills from the connection's config.
      if (req.headers['x-tenant'] !== tenant)
        return json(res, 400, { error: 'x-tenant must name the tenant' });
      accountLookups.push(accessToken);
      // Like DocuSign's accounts: the one the token is about is flagged among others.
      return json(res, 200, {
        portals: [
          { id: `portal-${tenant}-old`, default: false },
          { id: `portal-${tenant}`, name: tenant, default: true },
        ],
      });
    }
    if (req.method === 'GET' && url.pathname === '/v1/instance') {
      const key = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
      instanceLookups.push(key);
      const name = /^sk_test_([a-z0-9]+)$/.exec(key)?.[1];
      // A careless provider: its refusal quotes the key it was given, in its own words.
      if (!name) return json(res, 401, { errors: [{ message: `Secret key ${key} is not valid here` }] });
      return json(res, 200, { object: 'instance', id: `ins_${name}`, environment_type: 'development' });
    }
    if (req.method === 'GET' && url.pathname === '/v1/me') {
      const key = String(req.headers['x-api-key'] ?? '');
      verificationKeys.push(key);
      return key === goodApiKey ? json(res, 200, { id: 'me' }) : json(res, 401, { error: 'invalid api key' });
    }

    const authorize = /^\/([a-z0-9-]+)\/authorize$/.exec(url.pathname);
    if (req.method === 'GET' && authorize) {
      const q = url.searchParams;
      authorizeRequests.push(new URLSearchParams(q));
      const redirectUri = q.get('redirect_uri');
      const problem =
        q.get('client_id') !== clientId
          ? 'unknown client'
          : q.get('response_type') !== 'code'
            ? 'response_type must be code'
            : !redirectUri
              ? 'redirect_uri missing'
              : !q.get('state')
                ? 'state missing'
                : q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge')
                  ? 'PKCE S256 required'
                  : undefined;
      if (problem || !redirectUri) {
        res.writeHead(400, { 'content-type': 'text/plain' });
        return res.end(problem);
      }
      // The tenant `consent-screen` stops at a consent screen that never approves (an end user who leaves).
      if (authorize[1] === 'consent-screen') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        return res.end('<!doctype html><title>Consent</title><h1>Allow Customer to read your data?</h1>');
      }
      const code = `code_${randomBytes(12).toString('hex')}`;
      codes.set(code, { challenge: q.get('code_challenge')!, redirectUri, tenant: authorize[1]! });
      const back = new URL(redirectUri);
      back.searchParams.set('code', code);
      back.searchParams.set('state', q.get('state')!);
      res.writeHead(302, { location: back.toString() });
      return res.end();
    }

    // A careless token endpoint: its error echoes the request it got (body and headers), whole in the
    // description, URL-decoded in `error`, and cut short in `message` (as a provider that truncates does).
    if (req.method === 'POST' && (url.pathname === '/echo/token' || url.pathname === '/echo-cc/token')) {
      const echoed = `${text} ${JSON.stringify(req.headers)}`;
      const decoded = (() => {
        try {
          return decodeURIComponent(text.replace(/\+/g, ' '));
        } catch {
          return text;
        }
      })();
      const cut = decoded.indexOf('client_secret=');
      return json(res, 400, {
        error: `invalid_client: ${decoded}`,
        error_description: echoed,
        message: cut >= 0 ? decoded.slice(0, cut + 'client_secret='.length + 9) : decoded,
        request: { body: text, headers: req.headers },
      });
    }
    if (req.method === 'POST' && url.pathname === '/cc/token') {
      const params = new URLSearchParams(text);
      if (params.get('grant_type') !== 'client_credentials')
        return json(res, 400, { error: 'unsupported_grant_type' });
      if (params.get('client_id') !== clientId || params.get('client_secret') !== clientSecret)
        return json(res, 401, { error: 'invalid_client' });
      const issued = `cc_${randomBytes(12).toString('hex')}`;
      clientCredentialTokens.push(issued);
      return json(res, 200, { access_token: issued, token_type: 'bearer', expires_in: 3600 });
    }

    // A GitHub-style app: installing it sends the browser to the app's setup URL with the installation and,
    // as GitHub does when the app requests user authorization during installation, a user code.
    if (req.method === 'GET' && url.pathname === '/apps/test-app/installations/new') {
      if (!appSetupUrl || !url.searchParams.get('state'))
        return json(res, 400, { error: 'no setup url or state' });
      const code = `ghcode_${randomBytes(8).toString('hex')}`;
      githubCodes.set(code, { user: githubUser });
      const back = new URL(appSetupUrl);
      back.searchParams.set('code', code);
      back.searchParams.set('installation_id', String(GITHUB_INSTALLATIONS[githubUser]));
      back.searchParams.set('setup_action', 'install');
      back.searchParams.set('state', url.searchParams.get('state')!);
      res.writeHead(302, { location: back.toString() });
      return res.end();
    }
    // A GitHub-style user authorization (an app the user already authorized: no consent screen).
    if (req.method === 'GET' && url.pathname === '/gh/login/oauth/authorize') {
      const q = url.searchParams;
      const redirectUri = q.get('redirect_uri');
      if (
        q.get('client_id') !== clientId ||
        !redirectUri ||
        !q.get('state') ||
        (q.get('code_challenge') && q.get('code_challenge_method') !== 'S256')
      )
        return json(res, 400, { error: 'bad authorization request' });
      const code = `ghcode_${randomBytes(8).toString('hex')}`;
      githubCodes.set(code, {
        user: githubUser,
        redirectUri,
        ...(q.get('code_challenge') ? { challenge: q.get('code_challenge')! } : {}),
      });
      const back = new URL(redirectUri);
      back.searchParams.set('code', code);
      back.searchParams.set('state', q.get('state')!);
      res.writeHead(302, { location: back.toString() });
      return res.end();
    }
    if (req.method === 'POST' && url.pathname === '/gh/login/oauth/access_token') {
      const params = new URLSearchParams(text);
      const code = params.get('code') ?? '';
      const decide = (outcome: string, body: Record<string, unknown>) => {
        githubCodeExchanges.push({ code, outcome });
        return json(res, 200, body);
      };
      if (params.get('client_id') !== clientId || params.get('client_secret') !== clientSecret)
        return decide('incorrect_client_credentials', { error: 'incorrect_client_credentials' });
      const issued = githubCodes.get(code);
      githubCodes.delete(code); // single use, whatever happens next
      if (!issued) return decide('bad_verification_code', { error: 'bad_verification_code' });
      const verifier = params.get('code_verifier');
      const pkceOk = issued.challenge
        ? !!verifier && createHash('sha256').update(verifier).digest('base64url') === issued.challenge
        : !verifier;
      if (!pkceOk) return decide('pkce_mismatch', { error: 'bad_verification_code' });
      if (issued.redirectUri && params.get('redirect_uri') !== issued.redirectUri)
        return decide('redirect_uri_mismatch', { error: 'redirect_uri_mismatch' });
      const userToken = `ghu_${randomBytes(8).toString('hex')}`;
      githubUserTokens.set(userToken, issued.user);
      return decide(`issued:${issued.user}`, { access_token: userToken, token_type: 'bearer' });
    }
    if (req.method === 'GET' && url.pathname === '/gh/user/installations') {
      installationChecks += 1;
      const userToken = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
      const user = githubUserTokens.get(userToken);
      if (!user) return json(res, 401, { message: 'Bad credentials' });
      return json(res, 200, {
        total_count: 1,
        installations: [{ id: GITHUB_INSTALLATIONS[user], account: { login: user } }],
      });
    }
    const installationToken = /^\/app\/installations\/(\d+)\/access_tokens$/.exec(url.pathname);
    if (req.method === 'POST' && installationToken) {
      installationTokenRequests.push(installationToken[1]!);
      const jwt = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
      const [header, payload, signature] = jwt.split('.');
      const valid =
        !!appPublicKey &&
        !!signature &&
        createVerify('RSA-SHA256')
          .update(`${header}.${payload}`)
          .verify(appPublicKey, Buffer.from(signature, 'base64url'));
      if (!valid) return json(res, 401, { message: 'A JSON web token could not be decoded' });
      const issued = `ghs_${randomBytes(12).toString('hex')}`;
      installationTokens.push(issued);
      return json(res, 201, { token: issued, expires_at: new Date(Date.now() + 3600_000).toISOString() });
    }

    const token = /^\/([a-z0-9-]+)\/token$/.exec(url.pathname);
    if (req.method === 'POST' && token) {
      const params = new URLSearchParams(text);
      const record = (outcome: string) => tokenRequests.push({ params, outcome });
      const basic = /^Basic (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
      const [basicId, basicSecret] = basic
        ? Buffer.from(basic, 'base64').toString('utf8').split(':').map(decodeURIComponent)
        : [];
      if (
        (params.get('client_id') ?? basicId) !== clientId ||
        (params.get('client_secret') ?? basicSecret) !== clientSecret
      ) {
        record('invalid_client');
        return json(res, 401, { error: 'invalid_client' });
      }
      if (params.get('grant_type') !== 'authorization_code') {
        record('unsupported_grant_type');
        return json(res, 400, { error: 'unsupported_grant_type' });
      }
      const code = params.get('code') ?? '';
      const pending = codes.get(code);
      codes.delete(code); // single use, whatever happens next
      if (!pending || pending.tenant !== token[1]) {
        record('invalid_grant');
        return json(res, 400, { error: 'invalid_grant', error_description: 'unknown or used code' });
      }
      if (params.get('redirect_uri') !== pending.redirectUri) {
        record('redirect_uri_mismatch');
        return json(res, 400, { error: 'invalid_grant', error_description: 'redirect_uri mismatch' });
      }
      const verifier = params.get('code_verifier') ?? '';
      if (createHash('sha256').update(verifier).digest('base64url') !== pending.challenge) {
        record('pkce_mismatch');
        return json(res, 400, { error: 'invalid_grant', error_description: 'PKCE verification failed' });
      }
      const accessToken = `at_${randomBytes(16).toString('hex')}`;
      accessTokens.push(accessToken);
      tokenTenants.set(accessToken, pending.tenant);
      record('issued');
      return json(res, 200, {
        access_token: accessToken,
        refresh_token: `rt_${randomBytes(16).toString('hex')}`,
        token_type: 'bearer',
        expires_in: 3600,
        team: 'acme',
      });
    }
    return json(res, 404, { error: 'not_found' });
  };

  const https = await serveLoopbackHttps(handle);
  return {
    url: https.url,
    caFile: https.caFile,
    clientId,
    clientSecret,
    goodApiKey,
    authorizeRequests,
    tokenRequests,
    verificationKeys,
    accessTokens,
    clientCredentialTokens,
    installationTokens,
    installationTokenRequests,
    accountLookups,
    instanceLookups,
    get installationChecks() {
      return installationChecks;
    },
    githubCodeExchanges,
    actAs: (user) => {
      githubUser = user;
    },
    setAppSetupUrl: (setupUrl, publicKey) => {
      appSetupUrl = setupUrl;
      appPublicKey = publicKey;
    },
    get: https.get,
    stop: https.stop,
  };
}
