import { createHash, createHmac, randomBytes, timingSafeEqual, verify } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  oauth1SignatureBase,
  oauth1SigningKey,
  parseOAuthAuthorization,
  serveLoopbackHttps,
} from '@switchboard/testing';
import { appConnectionConfigYaml } from './providers-file';

/**
 * The fake provider of the OAuth 1.0a and GitHub App OAuth (CUSTOM) connect flows, and the providers that
 * point both integrations at it. It checks every OAuth 1.0a signature itself from RFC 5849 §3.4 and
 * every app JWT with the app's public key.
 */

export interface Fake {
  url: string;
  caFile: string;
  consumerKey: string;
  consumerSecret: string;
  clientId: string;
  clientSecret: string;
  appId: string;
  installationId: string;
  /** Every signed OAuth 1.0a call: the path and whether its signature verified. */
  oauth1Calls: { path: string; signature: 'valid' | string; outcome: string }[];
  /** The oauth_callback each request-token call asked for. */
  oauth1Callbacks: string[];
  oauth1AccessTokens: { token: string; secret: string }[];
  userTokens: string[];
  installationTokens: string[];
  /** Problems found with app JWTs or user-token requests (empty when everything was signed right). */
  rejected: string[];
  setGatewayCallback(url: string, appPublicKey: string): void;
  get(url: URL): Promise<{ status: number; location: string | undefined }>;
  stop(): Promise<void>;
}

export async function startFake(): Promise<Fake> {
  const consumerKey = `ck-${randomBytes(4).toString('hex')}`;
  const consumerSecret = `cs-${randomBytes(12).toString('hex')}`;
  const clientId = `Iv1.${randomBytes(6).toString('hex')}`;
  const clientSecret = `ghsecret-${randomBytes(12).toString('hex')}`;
  const appId = String(100_000 + Math.floor(Math.random() * 800_000));
  const installationId = '777001';
  const temporary = new Map<string, { secret: string; callback: string; verifier?: string }>();
  const nonces = new Set<string>();
  const codes = new Map<string, string>();
  /** The PKCE challenge each user-authorization code was issued for (install codes have none). */
  const challenges = new Map<string, string>();
  const fake = {
    oauth1Calls: [] as Fake['oauth1Calls'],
    oauth1Callbacks: [] as string[],
    oauth1AccessTokens: [] as Fake['oauth1AccessTokens'],
    userTokens: [] as string[],
    installationTokens: [] as string[],
    rejected: [] as string[],
  };
  let gatewayCallback = '';
  let appPublicKey = '';

  const send = (res: ServerResponse, status: number, type: string, body: string) => {
    res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
    res.end(body);
  };
  const form = (res: ServerResponse, status: number, body: string) =>
    send(res, status, 'application/x-www-form-urlencoded', body);
  const json = (res: ServerResponse, status: number, body: unknown) =>
    send(res, status, 'application/json', JSON.stringify(body));

  /** RFC 5849 §3.4.1 base string and §3.4.2 HMAC-SHA1, plus timestamp and nonce (§3.3). */
  const checkSignature = (
    method: string,
    url: URL,
    header: Record<string, string>,
    tokenSecret: string,
  ): string | undefined => {
    if (header['oauth_consumer_key'] !== consumerKey) return 'consumer_key_unknown';
    if (header['oauth_signature_method'] !== 'HMAC-SHA1') return 'signature_method_rejected';
    if (header['oauth_version'] !== undefined && header['oauth_version'] !== '1.0') return 'version_rejected';
    const timestamp = Number(header['oauth_timestamp']);
    if (!Number.isInteger(timestamp) || Math.abs(Date.now() / 1000 - timestamp) > 300)
      return 'timestamp_refused';
    const nonce = `${header['oauth_timestamp']}:${header['oauth_nonce']}`;
    if (!header['oauth_nonce'] || nonces.has(nonce)) return 'nonce_used';
    nonces.add(nonce);
    const expected = createHmac('sha1', oauth1SigningKey(consumerSecret, tokenSecret))
      .update(oauth1SignatureBase(method, url, header))
      .digest('base64');
    const got = header['oauth_signature'] ?? '';
    return expected.length === got.length && timingSafeEqual(Buffer.from(expected), Buffer.from(got))
      ? undefined
      : 'signature_invalid';
  };

  /** An RS256 app JWT signed by the app's private key, issued by the app, valid now and for at most 10 minutes. */
  const jwtProblem = (authorization: string | undefined): string | undefined => {
    const jwt = /^Bearer (.+)$/.exec(authorization ?? '')?.[1] ?? '';
    const [header, payload, signature] = jwt.split('.');
    if (!header || !payload || !signature) return 'not a JWT';
    if (
      !verify(
        'sha256',
        Buffer.from(`${header}.${payload}`),
        appPublicKey,
        Buffer.from(signature, 'base64url'),
      )
    )
      return 'bad JWT signature';
    const head = JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as { alg?: string };
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as {
      iss?: unknown;
      iat?: number;
      exp?: number;
    };
    const now = Date.now() / 1000;
    if (head.alg !== 'RS256') return `alg ${head.alg}`;
    if (String(claims.iss) !== appId) return `iss ${String(claims.iss)}`;
    if (
      !claims.exp ||
      !claims.iat ||
      claims.exp <= now ||
      claims.iat > now + 5 ||
      claims.exp - claims.iat > 11 * 60
    )
      return 'JWT times';
    return undefined;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', `https://${req.headers.host ?? '127.0.0.1'}`);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');

    // OAuth 1.0a: the end user "approves" at once, and the browser goes back with a verifier.
    if (req.method === 'GET' && url.pathname === '/o1/authorize') {
      const pending = temporary.get(url.searchParams.get('oauth_token') ?? '');
      if (!pending) return form(res, 400, 'oauth_problem=token_rejected');
      pending.verifier = `v-${randomBytes(8).toString('hex')}`;
      const back = new URL(pending.callback);
      back.searchParams.set('oauth_token', url.searchParams.get('oauth_token')!);
      back.searchParams.set('oauth_verifier', pending.verifier);
      res.writeHead(302, { location: back.toString() });
      return res.end();
    }
    if (
      req.method === 'POST' &&
      (url.pathname === '/o1/request_token' || url.pathname === '/o1/access_token')
    ) {
      const header = parseOAuthAuthorization(req.headers.authorization);
      if (!header) {
        fake.oauth1Calls.push({ path: url.pathname, signature: 'absent', outcome: 'refused' });
        return form(res, 401, 'oauth_problem=parameter_absent');
      }
      const token = header['oauth_token'];
      const tokenSecret = token ? temporary.get(token)?.secret : '';
      if (tokenSecret === undefined) {
        fake.oauth1Calls.push({ path: url.pathname, signature: 'token_rejected', outcome: 'refused' });
        return form(res, 401, 'oauth_problem=token_rejected');
      }
      const problem = checkSignature(req.method, url, header, tokenSecret);
      const record = (outcome: string) =>
        fake.oauth1Calls.push({ path: url.pathname, signature: problem ?? 'valid', outcome });
      if (problem) {
        record('refused');
        return form(res, 401, `oauth_problem=${problem}`);
      }
      if (url.pathname === '/o1/request_token') {
        if (token) {
          record('refused');
          return form(res, 400, 'oauth_problem=token_not_expected');
        }
        const key = `rt-${randomBytes(6).toString('hex')}`;
        const secret = `rts-${randomBytes(6).toString('hex')}`;
        temporary.set(key, { secret, callback: header['oauth_callback'] ?? '' });
        fake.oauth1Callbacks.push(header['oauth_callback'] ?? '');
        record('issued');
        return form(
          res,
          200,
          `oauth_token=${key}&oauth_token_secret=${secret}&oauth_callback_confirmed=true`,
        );
      }
      const pending = token ? temporary.get(token) : undefined;
      if (!pending?.verifier || pending.verifier !== header['oauth_verifier']) {
        record('verifier_invalid');
        return form(res, 401, 'oauth_problem=verifier_invalid');
      }
      temporary.delete(token!);
      const issued = {
        token: `at-${randomBytes(8).toString('hex')}`,
        secret: `ats-${randomBytes(8).toString('hex')}`,
      };
      fake.oauth1AccessTokens.push(issued);
      record('issued');
      return form(res, 200, `oauth_token=${issued.token}&oauth_token_secret=${issued.secret}&user_id=42`);
    }

    // GitHub App with "request user authorization during installation": installing sends the browser to
    // the OAuth callback with both the installation and an authorization code.
    if (req.method === 'GET' && url.pathname === '/gh/apps/oauth-app/installations/new') {
      const state = url.searchParams.get('state');
      if (!gatewayCallback || !state) return json(res, 400, { error: 'no callback or state' });
      const code = `ghcode-${randomBytes(8).toString('hex')}`;
      codes.set(code, gatewayCallback);
      const back = new URL(gatewayCallback);
      back.searchParams.set('code', code);
      back.searchParams.set('installation_id', installationId);
      back.searchParams.set('setup_action', 'install');
      back.searchParams.set('state', state);
      res.writeHead(302, { location: back.toString() });
      return res.end();
    }
    // The app's user authorization (already authorized: no consent screen), with PKCE S256.
    if (req.method === 'GET' && url.pathname === '/gh/login/oauth/authorize') {
      const q = url.searchParams;
      if (
        q.get('client_id') !== clientId ||
        q.get('redirect_uri') !== gatewayCallback ||
        !q.get('state') ||
        !q.get('code_challenge') ||
        q.get('code_challenge_method') !== 'S256'
      )
        return json(res, 400, { error: 'bad authorization request' });
      const code = `ghcode-${randomBytes(8).toString('hex')}`;
      codes.set(code, gatewayCallback);
      challenges.set(code, q.get('code_challenge')!);
      const back = new URL(gatewayCallback);
      back.searchParams.set('code', code);
      back.searchParams.set('state', q.get('state')!);
      res.writeHead(302, { location: back.toString() });
      return res.end();
    }
    if (req.method === 'POST' && url.pathname === '/gh/login/oauth/access_token') {
      const params = new URLSearchParams(
        text.trim().startsWith('{') ? (JSON.parse(text) as Record<string, string>) : text,
      );
      const basic = /^Basic (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
      const [basicId, basicSecret] = basic
        ? Buffer.from(basic, 'base64').toString('utf8').split(':').map(decodeURIComponent)
        : [];
      const code = params.get('code') ?? '';
      const redirectUri = codes.get(code);
      const challenge = challenges.get(code);
      codes.delete(code);
      challenges.delete(code);
      const verifier = params.get('code_verifier');
      const problem =
        (params.get('client_id') ?? basicId) !== clientId ||
        (params.get('client_secret') ?? basicSecret) !== clientSecret
          ? 'invalid_client'
          : !redirectUri
            ? 'bad_verification_code'
            : params.get('redirect_uri') !== redirectUri
              ? 'redirect_uri_mismatch'
              : (
                    challenge
                      ? !verifier || createHash('sha256').update(verifier).digest('base64url') !== challenge
                      : !!verifier
                  )
                ? 'pkce_mismatch'
                : undefined;
      if (problem) {
        fake.rejected.push(`user token: ${problem}`);
        return json(res, 400, { error: problem });
      }
      const issued = `ghu_${randomBytes(12).toString('hex')}`;
      fake.userTokens.push(issued);
      return json(res, 200, {
        access_token: issued,
        token_type: 'bearer',
        scope: '',
        refresh_token: `ghr_${randomBytes(12).toString('hex')}`,
        expires_in: 28800,
      });
    }
    // GET /user/installations with a user token: the installations that user can see (only this one).
    if (req.method === 'GET' && url.pathname === '/gh/api/user/installations') {
      const userToken = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
      if (!fake.userTokens.includes(userToken)) {
        fake.rejected.push('installations: bad credentials');
        return json(res, 401, { message: 'Bad credentials' });
      }
      return json(res, 200, { total_count: 1, installations: [{ id: Number(installationId) }] });
    }
    const installation = /^\/gh\/api\/app\/installations\/(\d+)\/access_tokens$/.exec(url.pathname);
    if (req.method === 'POST' && installation) {
      const problem =
        installation[1] !== installationId ? 'unknown installation' : jwtProblem(req.headers.authorization);
      if (problem) {
        fake.rejected.push(`installation token: ${problem}`);
        return json(res, 401, { message: 'A JSON web token could not be decoded' });
      }
      const issued = `ghs_${randomBytes(12).toString('hex')}`;
      fake.installationTokens.push(issued);
      return json(res, 201, { token: issued, expires_at: new Date(Date.now() + 3600_000).toISOString() });
    }
    return json(res, 404, { error: 'not_found' });
  };

  const https = await serveLoopbackHttps(handle);
  return {
    url: https.url,
    caFile: https.caFile,
    consumerKey,
    consumerSecret,
    clientId,
    clientSecret,
    appId,
    installationId,
    ...fake,
    setGatewayCallback: (callback, publicKey) => {
      gatewayCallback = callback;
      appPublicKey = publicKey;
    },
    get: https.get,
    stop: https.stop,
  };
}

/** The two providers of these flows (OAuth 1.0a and GitHub App OAuth), pointing at the fake. */
export function oauth1CustomProvidersYaml(providerUrl: string): string {
  return `fake-oauth1:
  display_name: Fake OAuth1
  categories: [other]
  auth_mode: OAUTH1
  request_url: ${providerUrl}/o1/request_token
  authorization_url: ${providerUrl}/o1/authorize
  token_url: ${providerUrl}/o1/access_token
  signature_method: HMAC-SHA1
  proxy:
    base_url: ${providerUrl}/o1/api
  docs: https://docs.example.com/fake-oauth1

fake-github-app-oauth:
  display_name: Fake GitHub App OAuth
  categories: [dev-tools]
  auth_mode: CUSTOM
  authorization_url: \${connectionConfig.appPublicLink}/installations/new
  token_url: ${providerUrl}/gh/login/oauth/access_token
  installation_check:
    authorization_url: ${providerUrl}/gh/login/oauth/authorize
    token_url: ${providerUrl}/gh/login/oauth/access_token
    installations_url: ${providerUrl}/gh/api/user/installations
  proxy:
    base_url: ${providerUrl}/gh/api
  docs: https://docs.example.com/fake-github-app-oauth
${appConnectionConfigYaml(`^${providerUrl.replace(/\./g, '\\.')}/gh/apps/[a-z-]+$`)}`;
}
