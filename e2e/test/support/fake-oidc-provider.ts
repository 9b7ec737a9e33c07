import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { serveLoopbackHttps } from '@switchboard/testing';

/**
 * A fake OpenID Connect provider on loopback, over HTTPS with a throwaway certificate (give the relying
 * party `NODE_EXTRA_CA_CERTS: caFile`): discovery, JWKS, an authorization endpoint that signs in whoever
 * `signInAs` named without asking, and a token endpoint that checks the client, the code (single use), the
 * redirect URI and the PKCE verifier, and answers an RS256 ID token carrying the request's nonce.
 */
export interface FakeOidcProvider {
  issuer: string;
  caFile: string;
  clientId: string;
  clientSecret: string;
  /** Who the next authorization signs in. */
  signInAs(user: { email: string; email_verified: boolean }): void;
  /** Token requests refused so far (wrong client, code, verifier or redirect URI). */
  refusedTokenRequests(): number;
  stop(): Promise<void>;
}

interface PendingCode {
  clientId: string;
  redirectUri: string;
  nonce: string;
  codeChallenge: string;
  user: { email: string; email_verified: boolean };
}

const b64url = (value: Buffer | string) => Buffer.from(value).toString('base64url');

function signJwt(privateKey: KeyObject, kid: string, claims: Record<string, unknown>): string {
  const header = b64url(JSON.stringify({ alg: 'RS256', typ: 'JWT', kid }));
  const payload = b64url(JSON.stringify(claims));
  const signature = sign('sha256', Buffer.from(`${header}.${payload}`), privateKey);
  return `${header}.${payload}.${b64url(signature)}`;
}

export async function startFakeOidcProvider(): Promise<FakeOidcProvider> {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const kid = randomBytes(8).toString('hex');
  const clientId = `console-${randomBytes(4).toString('hex')}`;
  const clientSecret = `secret-${randomBytes(16).toString('hex')}`;
  const codes = new Map<string, PendingCode>();
  let next: { email: string; email_verified: boolean } | undefined;
  let refused = 0;
  let issuer = '';

  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    res.end(JSON.stringify(body));
  };
  const readBody = async (req: IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', issuer);
    if (req.method === 'GET' && url.pathname === '/.well-known/openid-configuration') {
      return json(res, 200, {
        issuer,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks`,
        response_types_supported: ['code'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['RS256'],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      });
    }
    if (req.method === 'GET' && url.pathname === '/jwks') {
      return json(res, 200, {
        keys: [{ ...publicKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' }],
      });
    }
    if (req.method === 'GET' && url.pathname === '/authorize') {
      const q = url.searchParams;
      const user = next;
      if (
        !user ||
        q.get('client_id') !== clientId ||
        q.get('response_type') !== 'code' ||
        q.get('code_challenge_method') !== 'S256' ||
        !q.get('scope')?.split(' ').includes('openid')
      ) {
        return json(res, 400, { error: 'invalid_request' });
      }
      const code = randomBytes(16).toString('hex');
      codes.set(code, {
        clientId,
        redirectUri: q.get('redirect_uri') ?? '',
        nonce: q.get('nonce') ?? '',
        codeChallenge: q.get('code_challenge') ?? '',
        user,
      });
      const back = new URL(q.get('redirect_uri') ?? '');
      back.searchParams.set('code', code);
      back.searchParams.set('state', q.get('state') ?? '');
      res.writeHead(302, { location: back.href });
      return res.end();
    }
    if (req.method === 'POST' && url.pathname === '/token') {
      const form = await readBody(req);
      const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      const [id, secret] = basic
        ? Buffer.from(basic, 'base64')
            .toString('utf8')
            .split(':')
            .map((part) => decodeURIComponent(part))
        : [form.get('client_id'), form.get('client_secret')];
      const code = form.get('code') ?? '';
      const pending = codes.get(code);
      codes.delete(code);
      const verifier = form.get('code_verifier') ?? '';
      if (
        id !== clientId ||
        secret !== clientSecret ||
        form.get('grant_type') !== 'authorization_code' ||
        !pending ||
        pending.redirectUri !== form.get('redirect_uri') ||
        createHash('sha256').update(verifier).digest('base64url') !== pending.codeChallenge
      ) {
        refused += 1;
        return json(res, 400, { error: 'invalid_grant' });
      }
      const now = Math.floor(Date.now() / 1000);
      const idToken = signJwt(privateKey, kid, {
        iss: issuer,
        aud: clientId,
        sub: `user-${createHash('sha256').update(pending.user.email).digest('hex').slice(0, 12)}`,
        email: pending.user.email,
        email_verified: pending.user.email_verified,
        nonce: pending.nonce,
        iat: now,
        exp: now + 300,
      });
      return json(res, 200, {
        access_token: randomBytes(16).toString('hex'),
        token_type: 'Bearer',
        expires_in: 300,
        id_token: idToken,
      });
    }
    return json(res, 404, { error: 'not_found' });
  };

  const https = await serveLoopbackHttps(handle, 'fake-oidc-');
  issuer = https.url;

  return {
    issuer,
    caFile: https.caFile,
    clientId,
    clientSecret,
    signInAs: (user) => {
      next = user;
    },
    refusedTokenRequests: () => refused,
    stop: https.stop,
  };
}
