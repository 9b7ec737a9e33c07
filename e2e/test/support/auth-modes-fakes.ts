import {
  createHash,
  createHmac,
  createPublicKey,
  createVerify,
  randomBytes,
  type KeyObject,
} from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { makeLoopbackCertificate } from '@switchboard/testing';

/**
 * A fake provider for the token-issuing auth modes, on loopback over HTTPS. Each API route checks the
 * credential exactly where the real provider expects it, with checks written from the providers' docs
 * (not with the code Switchboard signs with), and answers 401 otherwise:
 *
 * - Snowflake key-pair JWT (`/sf/...`): RS256 signed by the user's key, `iss` = ACCOUNT.USER.SHA256:<fp of
 *   the public key>, `sub` = ACCOUNT.USER, at most an hour long, plus the KEYPAIR_JWT header.
 * - Ghost Admin (`/ghost/...`): `Authorization: Ghost <jwt>`, HS256 with the hex-decoded secret, `kid` = the
 *   key id, `aud` = /admin/, five minutes long.
 * - App Store Connect (`/asc/...`): ES256, `kid`, `iss` = issuer id, `aud` = appstoreconnect-v1.
 * - A TWO_STEP token endpoint (`/p81/...`) issuing short-lived tokens, and an API taking them as Bearer.
 * - ConnectSecure (`/cs/...`): `POST /w/authorize` with `client-auth-token: base64(<tenant>+<id>:<secret>)`
 *   answers `access_token`, `expires_in` and `user_id`; the API wants `Bearer <token>` and `x-user-id`.
 * - Bill (`/bill/...`): login gives a session id; calls need `devKey` and `sessionId` headers.
 * - WSSE (`/wsse/...`): the X-WSSE digest, a fresh `Created` and a nonce never seen before.
 * - Client-credentials token endpoints shaped as Auth0's (JSON body with audience) and Microsoft's (tenant in
 *   the path, form body with the .default scope).
 */
export interface AuthModesFake {
  url: string;
  caFile: string;
  snowflake: { account: string; user: string; publicKey: KeyObject };
  ghost: { id: string; secret: string };
  apple: { issuerId: string; keyId: string; publicKey: KeyObject };
  twoStep: { apiKey: string; ttlSeconds: number; issued: { token: string; expiresAt: number }[] };
  google: { email: string; tokens: string[] };
  tripletex: { consumerToken: string; employeeToken: string; sessions: string[] };
  connectsecure: {
    tenant: string;
    clientId: string;
    clientSecret: string;
    userId: string;
    ttlSeconds: number;
    /** The client-auth-token header of every authorize call, as received. */
    authTokens: string[];
    issued: { token: string; expiresAt: number }[];
    /** What each accepted API call carried. */
    apiCalls: { authorization: string; userId: string }[];
  };
  bill: { username: string; password: string; organizationId: string; devKey: string; sessions: string[] };
  wsse: { username: string; password: string; nonces: Set<string> };
  cc: {
    clientId: string;
    clientSecret: string;
    tenant: string;
    requests: { route: string; params: Record<string, string> }[];
    issued: string[];
  };
  /** JWTs each API accepted, by route family, in order. */
  accepted: Record<'sf' | 'ghost' | 'asc', { token: string; iat: number; exp: number }[]>;
  stop(): Promise<void>;
}

const b64url = (s: string) => Buffer.from(s, 'base64url');

function decodeJwt(
  token: string,
):
  | { header: Record<string, unknown>; payload: Record<string, unknown>; signed: string; signature: Buffer }
  | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  try {
    return {
      header: JSON.parse(b64url(parts[0]!).toString('utf8')) as Record<string, unknown>,
      payload: JSON.parse(b64url(parts[1]!).toString('utf8')) as Record<string, unknown>,
      signed: `${parts[0]}.${parts[1]}`,
      signature: b64url(parts[2]!),
    };
  } catch {
    return undefined;
  }
}

export async function startAuthModesFake(keys: {
  snowflakePublicKeyPem: string;
  applePublicKeyPem: string;
}): Promise<AuthModesFake> {
  const { keyFile, certFile } = makeLoopbackCertificate();
  const snowflakePublicKey = createPublicKey(keys.snowflakePublicKeyPem);
  const applePublicKey = createPublicKey(keys.applePublicKeyPem);
  const fake: Omit<AuthModesFake, 'url' | 'stop'> = {
    caFile: certFile,
    snowflake: { account: 'MYORG-ACCT1', user: 'ROBOT', publicKey: snowflakePublicKey },
    ghost: { id: randomBytes(12).toString('hex'), secret: randomBytes(32).toString('hex') },
    apple: {
      issuerId: '57246542-96fe-1a63-e053-0824d011072a',
      keyId: '2X9R4HXF34',
      publicKey: applePublicKey,
    },
    twoStep: { apiKey: `p81-${randomBytes(8).toString('hex')}`, ttlSeconds: 6, issued: [] },
    google: { email: 'robot@my-project.iam.gserviceaccount.com', tokens: [] },
    tripletex: {
      consumerToken: `eyJ${randomBytes(12).toString('hex')}`,
      employeeToken: `eyJ${randomBytes(12).toString('hex')}`,
      sessions: [],
    },
    connectsecure: {
      tenant: 'example-tenant',
      clientId: `cs-client-${randomBytes(4).toString('hex')}`,
      clientSecret: `cs-secret-${randomBytes(8).toString('hex')}`,
      userId: '383109345572815574',
      ttlSeconds: 6,
      authTokens: [],
      issued: [],
      apiCalls: [],
    },
    bill: {
      username: 'ap@example.com',
      password: `pw-${randomBytes(6).toString('hex')}`,
      organizationId: '00802ABCDEF',
      devKey: `dev-${randomBytes(6).toString('hex')}`,
      sessions: [],
    },
    wsse: { username: 'acme001', password: `wsse-${randomBytes(8).toString('hex')}`, nonces: new Set() },
    cc: {
      clientId: 'cc-client',
      clientSecret: `cc-${randomBytes(8).toString('hex')}`,
      tenant: '7f1c2e9a-1b2c-4d5e-8f90-0a1b2c3d4e5f',
      requests: [],
      issued: [],
    },
    accepted: { sf: [], ghost: [], asc: [] },
  };
  const snowflakeFingerprint = `SHA256:${createHash('sha256')
    .update(snowflakePublicKey.export({ type: 'spki', format: 'der' }))
    .digest('base64')}`;

  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const deny = (res: ServerResponse, why: string) => json(res, 401, { error: why });
  const nowS = () => Math.floor(Date.now() / 1000);

  /** Common JWT checks: signature by `verify`, not expired, lifetime at most `maxLifetime` seconds. */
  const checkJwt = (
    token: string,
    alg: string,
    verify: (signed: string, signature: Buffer) => boolean,
    maxLifetime: number,
  ): { header: Record<string, unknown>; payload: Record<string, unknown> } | string => {
    const jwt = decodeJwt(token);
    if (!jwt) return 'not a JWT';
    if (jwt.header['alg'] !== alg) return `alg must be ${alg}`;
    if (!verify(jwt.signed, jwt.signature)) return 'bad signature';
    const iat = Number(jwt.payload['iat']);
    const exp = Number(jwt.payload['exp']);
    if (!Number.isFinite(iat) || !Number.isFinite(exp)) return 'iat and exp are required';
    if (exp <= nowS()) return 'expired';
    if (exp - iat > maxLifetime) return 'lifetime too long';
    return jwt;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'https://127.0.0.1');
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const auth = String(req.headers.authorization ?? '');

    // ---- Snowflake key-pair JWT
    if (url.pathname === '/sf/api/v2/statements') {
      if (req.headers['x-snowflake-authorization-token-type'] !== 'KEYPAIR_JWT')
        return deny(res, 'token type header');
      const token = /^Bearer (.+)$/.exec(auth)?.[1] ?? '';
      const checked = checkJwt(
        token,
        'RS256',
        (signed, sig) => createVerify('RSA-SHA256').update(signed).verify(snowflakePublicKey, sig),
        3600,
      );
      if (typeof checked === 'string') return deny(res, checked);
      const qualified = `${fake.snowflake.account}.${fake.snowflake.user}`;
      if (checked.payload['sub'] !== qualified) return deny(res, 'sub');
      if (checked.payload['iss'] !== `${qualified}.${snowflakeFingerprint}`) return deny(res, 'iss');
      fake.accepted.sf.push({
        token,
        iat: Number(checked.payload['iat']),
        exp: Number(checked.payload['exp']),
      });
      return json(res, 200, { data: [['2026-01-01']], token });
    }

    // ---- Ghost Admin
    if (url.pathname.startsWith('/ghost/api/admin/')) {
      const token = /^Ghost (.+)$/.exec(auth)?.[1] ?? '';
      const key = Buffer.from(fake.ghost.secret, 'hex');
      const checked = checkJwt(
        token,
        'HS256',
        (signed, sig) => createHmac('sha256', key).update(signed).digest().equals(sig),
        300,
      );
      if (typeof checked === 'string') return deny(res, checked);
      if (checked.header['kid'] !== fake.ghost.id) return deny(res, 'kid');
      if (checked.payload['aud'] !== '/admin/') return deny(res, 'aud');
      if (req.headers['accept-version'] !== 'v5.0') return deny(res, 'accept-version');
      fake.accepted.ghost.push({
        token,
        iat: Number(checked.payload['iat']),
        exp: Number(checked.payload['exp']),
      });
      return json(res, 200, { users: [{ id: '1' }], token });
    }

    // ---- App Store Connect
    if (url.pathname === '/asc/v1/apps') {
      const token = /^Bearer (.+)$/.exec(auth)?.[1] ?? '';
      const checked = checkJwt(
        token,
        'ES256',
        (signed, sig) =>
          createVerify('SHA256')
            .update(signed)
            .verify({ key: applePublicKey, dsaEncoding: 'ieee-p1363' }, sig),
        1200,
      );
      if (typeof checked === 'string') return deny(res, checked);
      if (checked.header['kid'] !== fake.apple.keyId) return deny(res, 'kid');
      if (checked.payload['iss'] !== fake.apple.issuerId) return deny(res, 'iss');
      if (checked.payload['aud'] !== 'appstoreconnect-v1') return deny(res, 'aud');
      fake.accepted.asc.push({
        token,
        iat: Number(checked.payload['iat']),
        exp: Number(checked.payload['exp']),
      });
      return json(res, 200, { data: [], token, scope: checked.payload['scope'] ?? null });
    }

    // ---- TWO_STEP (Perimeter81-shaped)
    if (req.method === 'POST' && url.pathname === '/p81/api/v1/auth/authorize') {
      const body = JSON.parse(text || '{}') as Record<string, unknown>;
      if (req.headers['content-type'] !== 'application/json') return json(res, 415, { error: 'json only' });
      if (body['apiKey'] !== fake.twoStep.apiKey || body['grantType'] !== 'api_key')
        return deny(res, 'bad api key');
      const token = `p81-token-${fake.twoStep.issued.length + 1}-${randomBytes(4).toString('hex')}`;
      const expiresAt = Date.now() + fake.twoStep.ttlSeconds * 1000;
      fake.twoStep.issued.push({ token, expiresAt });
      return json(res, 200, { data: { accessToken: token, accessTokenExpire: expiresAt } });
    }
    if (url.pathname === '/p81/api/rest/v1/users') {
      const token = /^Bearer (.+)$/.exec(auth)?.[1] ?? '';
      const issued = fake.twoStep.issued.find((t) => t.token === token);
      if (!issued) return deny(res, 'unknown token');
      if (issued.expiresAt <= Date.now()) return deny(res, 'token expired');
      return json(res, 200, { data: [], token });
    }

    // ---- Google service account: a JWT-bearer grant signed with the account's key
    if (req.method === 'POST' && url.pathname === '/google/token') {
      const params = new URLSearchParams(text);
      if (params.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer')
        return json(res, 400, { error: 'unsupported_grant_type' });
      const checked = checkJwt(
        params.get('assertion') ?? '',
        'RS256',
        (signed, sig) => createVerify('RSA-SHA256').update(signed).verify(snowflakePublicKey, sig),
        3600,
      );
      if (typeof checked === 'string')
        return json(res, 400, { error: 'invalid_grant', error_description: checked });
      const p = checked.payload;
      if (
        p['iss'] !== fake.google.email ||
        p['aud'] !== 'https://oauth2.googleapis.com/token' ||
        p['scope'] !== 'https://www.googleapis.com/auth/drive.readonly' ||
        'sub' in p
      )
        return json(res, 400, { error: 'invalid_grant', error_description: 'claims' });
      const token = `ya29.${randomBytes(8).toString('hex')}`;
      fake.google.tokens.push(token);
      return json(res, 200, { access_token: token, expires_in: 3599, token_type: 'Bearer' });
    }
    if (url.pathname === '/google/drive/v3/files') {
      const token = /^Bearer (.+)$/.exec(auth)?.[1] ?? '';
      if (!fake.google.tokens.includes(token)) return deny(res, 'unknown token');
      return json(res, 200, { files: [], token });
    }

    // ---- Tripletex: PUT with the tokens in the query, then Basic <company id>:<session token>
    if (req.method === 'PUT' && url.pathname === '/tt/v2/token/session/:create') {
      const q = url.searchParams;
      const inAWeek = new Date(Date.now() + 7 * 86_400_000).toISOString().slice(0, 10);
      if (
        q.get('consumerToken') !== fake.tripletex.consumerToken ||
        q.get('employeeToken') !== fake.tripletex.employeeToken
      )
        return deny(res, 'tokens');
      if (q.get('expirationDate') !== inAWeek)
        return json(res, 400, { error: `expirationDate must be ${inAWeek}` });
      const token = `tt-${randomBytes(6).toString('hex')}`;
      fake.tripletex.sessions.push(token);
      return json(res, 200, { value: { token, expirationDate: inAWeek } });
    }
    if (url.pathname === '/tt/v2/employee') {
      const [user, session] = Buffer.from(/^Basic (.+)$/.exec(auth)?.[1] ?? '', 'base64')
        .toString('utf8')
        .split(':');
      if (user !== '0' || !fake.tripletex.sessions.includes(session ?? '')) return deny(res, 'basic');
      return json(res, 200, { values: [], token: session });
    }

    // ---- ConnectSecure: a computed client-auth-token, then Bearer plus the user id it answered
    if (req.method === 'POST' && url.pathname === '/cs/w/authorize') {
      const cs = fake.connectsecure;
      const presented = String(req.headers['client-auth-token'] ?? '');
      cs.authTokens.push(presented);
      const expected = Buffer.from(`${cs.tenant}+${cs.clientId}:${cs.clientSecret}`).toString('base64');
      if (presented !== expected) return json(res, 401, { status: false, message: 'Invalid credentials' });
      const token = `cs-token-${cs.issued.length + 1}-${randomBytes(4).toString('hex')}`;
      cs.issued.push({ token, expiresAt: Date.now() + cs.ttlSeconds * 1000 });
      return json(res, 200, {
        access_token: token,
        data: { access_token: token, user_id: cs.userId },
        expires_in: cs.ttlSeconds,
        status: true,
        token_type: 'bearer',
        user_id: cs.userId,
      });
    }
    if (url.pathname.startsWith('/cs/r/')) {
      const cs = fake.connectsecure;
      const token = /^Bearer (.+)$/.exec(auth)?.[1] ?? '';
      const issued = cs.issued.find((t) => t.token === token);
      if (!issued) return deny(res, 'unknown token');
      if (issued.expiresAt <= Date.now()) return deny(res, 'token expired');
      if (req.headers['x-user-id'] !== cs.userId) return json(res, 403, { error: 'x-user-id' });
      cs.apiCalls.push({ authorization: auth, userId: String(req.headers['x-user-id']) });
      return json(res, 200, { data: [], token });
    }

    // ---- Bill
    if (req.method === 'POST' && url.pathname === '/bill/connect/v3/login') {
      const body = JSON.parse(text || '{}') as Record<string, unknown>;
      const b = fake.bill;
      if (
        body['username'] !== b.username ||
        body['password'] !== b.password ||
        body['organizationId'] !== b.organizationId ||
        body['devKey'] !== b.devKey
      )
        return json(res, 400, { error: 'BDC_1109', message: 'Invalid user name or password' });
      const sessionId = `sess-${b.sessions.length + 1}-${randomBytes(4).toString('hex')}`;
      b.sessions.push(sessionId);
      return json(res, 200, { sessionId, userId: '00601AAAA', organizationId: b.organizationId });
    }
    if (url.pathname === '/bill/connect/v3/vendors') {
      if (req.headers['devkey'] !== fake.bill.devKey) return deny(res, 'devKey');
      const session = String(req.headers['sessionid'] ?? '');
      if (!fake.bill.sessions.includes(session)) return deny(res, 'sessionId');
      if (auth) return deny(res, 'no Authorization header expected');
      return json(res, 200, { results: [], sessionId: session });
    }

    // ---- WSSE
    if (url.pathname === '/wsse/api/v2/settings') {
      const header = String(req.headers['x-wsse'] ?? '');
      const m =
        /^UsernameToken Username="([^"]*)", PasswordDigest="([^"]*)", Nonce="([^"]*)", Created="([^"]*)"$/.exec(
          header,
        );
      if (!m) return deny(res, 'x-wsse');
      const [, username, digest, nonce, created] = m as unknown as [string, string, string, string, string];
      if (username !== fake.wsse.username) return deny(res, 'username');
      const expected = Buffer.from(
        createHash('sha1')
          .update(nonce + created + fake.wsse.password)
          .digest('hex'),
      ).toString('base64');
      if (digest !== expected) return deny(res, 'digest');
      if (Math.abs(Date.now() - Date.parse(created)) > 60_000) return deny(res, 'created too old');
      if (fake.wsse.nonces.has(nonce)) return deny(res, 'nonce replayed');
      fake.wsse.nonces.add(nonce);
      if (auth) return deny(res, 'no Authorization header expected');
      return json(res, 200, { data: { ok: true }, nonce });
    }

    // ---- Client credentials, Auth0-shaped and Microsoft-shaped
    if (req.method === 'POST' && url.pathname === '/auth0/oauth/token') {
      const params = JSON.parse(text || '{}') as Record<string, string>;
      fake.cc.requests.push({ route: 'auth0', params });
      if (req.headers['content-type'] !== 'application/json') return json(res, 415, { error: 'json only' });
      if (params['client_id'] !== fake.cc.clientId || params['client_secret'] !== fake.cc.clientSecret)
        return json(res, 401, { error: 'access_denied' });
      if (
        params['grant_type'] !== 'client_credentials' ||
        params['audience'] !== 'https://api.example.com/v2/'
      )
        return json(res, 403, { error: 'invalid_request' });
      const token = `auth0-${randomBytes(6).toString('hex')}`;
      fake.cc.issued.push(token);
      return json(res, 200, { access_token: token, token_type: 'Bearer', expires_in: 86400 });
    }
    const ms = /^\/ms\/([0-9a-f-]+)\/oauth2\/v2\.0\/token$/.exec(url.pathname);
    if (req.method === 'POST' && ms) {
      const params = Object.fromEntries(new URLSearchParams(text));
      fake.cc.requests.push({ route: `ms:${ms[1]}`, params });
      if (ms[1] !== fake.cc.tenant) return json(res, 400, { error: 'invalid_tenant' });
      if (params['client_id'] !== fake.cc.clientId || params['client_secret'] !== fake.cc.clientSecret)
        return json(res, 401, { error: 'invalid_client' });
      if (params['scope'] !== 'https://graph.microsoft.com/.default')
        return json(res, 400, { error: 'invalid_scope' });
      const token = `graph-${randomBytes(6).toString('hex')}`;
      fake.cc.issued.push(token);
      return json(res, 200, { access_token: token, token_type: 'Bearer', expires_in: 3599 });
    }
    if (url.pathname === '/api/whoami') {
      const token = /^Bearer (.+)$/.exec(auth)?.[1] ?? '';
      if (!fake.cc.issued.includes(token)) return deny(res, 'unknown token');
      return json(res, 200, { token });
    }
    json(res, 404, { error: 'not found' });
  };

  const server: Server = createServer(
    { key: readFileSync(keyFile), cert: readFileSync(certFile) },
    (req, res) => {
      handle(req, res).catch((error: unknown) => json(res, 500, { error: String(error) }));
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    ...fake,
    url: `https://127.0.0.1:${port}`,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Overrides that keep each real catalog entry but send its calls to the fake (a shallow patch per key). */
export function authModesProvidersYaml(url: string): string {
  const host = url.replace(/^https:\/\//, '');
  const hostPattern = `^${host.replace(/\./g, '\\.')}$`;
  return `snowflake-jwt:
  alias: snowflake-jwt
  token:
    signing_key: \${credentials.privateKey}
    expires_in_ms: 6000
    header: { typ: JWT }
    payload:
      iss: \${upper(credentials.accountIdentifier)}.\${upper(credentials.userName)}.\${fingerprint(credentials.privateKey)}
      sub: \${upper(credentials.accountIdentifier)}.\${upper(credentials.userName)}
  proxy:
    base_url: ${url}/sf
    headers:
      accept: application/json
      x-snowflake-authorization-token-type: KEYPAIR_JWT

ghost-admin:
  alias: ghost-admin
  proxy:
    base_url: ${url}/ghost/api/admin
    headers:
      accept: application/json
      accept-version: \${connectionConfig.version}
      authorization: Ghost \${accessToken}

apple-app-store:
  alias: apple-app-store
  proxy:
    base_url: ${url}/asc

perimeter81:
  alias: perimeter81
  token_url: ${url}/p81/api/v1/auth/authorize
  proxy:
    base_url: ${url}/p81/api/rest

google-service-account:
  alias: google-service-account
  token_url: ${url}/google/token
  proxy:
    base_url: ${url}/google

tripletex:
  alias: tripletex
  token_url: ${url}/tt/v2/token/session/:create
  proxy:
    base_url: ${url}/tt
    headers:
      authorization: Basic \${base64(connectionConfig.proxyCompanyId:accessToken)}

connectsecure:
  alias: connectsecure
  token_url: ${url}/cs/w/authorize
  proxy:
    base_url: ${url}/cs
    headers:
      accept: application/json
      x-user-id: \${connectionConfig.user_id}

bill:
  alias: bill
  token_url: ${url}/bill/connect/v3/login
  token_expires_in_ms: 5000
  proxy:
    base_url: ${url}/bill/connect
    headers:
      devKey: \${credentials.dev_key}
      sessionId: \${credentials.session_id}

emarsys:
  alias: emarsys
  proxy:
    base_url: ${url}/wsse
    headers:
      content-type: application/json
      x-wsse: \${accessToken}

fake-auth0-cc:
  display_name: Auth0 (Client Credentials), on loopback
  categories: [iam]
  auth_mode: OAUTH2_CC
  body_format: json
  token_url: https://\${connectionConfig.hostname}/auth0/oauth/token
  token_params:
    grant_type: client_credentials
    audience: \${connectionConfig.audience}
    organization: \${connectionConfig.organization}
  proxy:
    base_url: ${url}/api
  docs: https://docs.example.com/auth0-cc
  connection_config:
    hostname:
      type: string
      title: Tenant host
      format: hostname
      pattern: '${hostPattern}'
    audience:
      type: string
      title: Audience
      pattern: '^https://[^\\s]+$'
    organization:
      type: string
      title: Organization
      optional: true

microsoft-oauth2-cc:
  alias: microsoft-oauth2-cc
  token_url: ${url}/ms/\${connectionConfig.tenantId}/oauth2/v2.0/token
  proxy:
    base_url: ${url}/api
`;
}
