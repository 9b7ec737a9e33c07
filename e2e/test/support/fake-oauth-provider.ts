import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { serveLoopbackHttps } from '@switchboard/testing';

/**
 * A fake OAuth 2 provider on loopback, speaking HTTPS with a throwaway self-signed certificate (the
 * provider catalog accepts only https:// URLs; give auth-connect `NODE_EXTRA_CA_CERTS: provider.caFile`).
 *
 * `POST /oauth/token` with `grant_type=refresh_token` behaves like a strict RFC 9700 server: every use
 * rotates the refresh token; presenting one that was already used answers `invalid_grant` and revokes the
 * whole token family. Each call waits `delayMs` first (200 ms by default), so concurrent callers overlap.
 */
export interface FakeOAuthProvider {
  url: string;
  tokenUrl: string;
  /** PEM file of the certificate, for NODE_EXTRA_CA_CERTS. */
  caFile: string;
  clientId: string;
  clientSecret: string;
  /** Every `grant_type=refresh_token` request that reached the provider. */
  refreshCalls(): number;
  /** Refreshes that issued new tokens. */
  successfulRefreshes(): number;
  /** A fresh token family: the access and refresh token a connection starts with. */
  issue(): { access_token: string; refresh_token: string };
  /** The access token the family of this refresh token holds now (undefined once revoked). */
  currentAccessToken(refreshToken: string): string | undefined;
  /** Every access token ever issued (to look for them in logs). */
  issuedSecrets(): string[];
  /** Answer the next `n` refreshes with `error` (without consuming the refresh token). */
  failNext(n: number, error?: { status: number; error: string; description?: string }): void;
  /** Hold refresh calls until `release()` is called; `received()` resolves when one is held. */
  hold(): { received: Promise<void>; release: (outcome: 'fail' | 'proceed') => void };
  setDelay(ms: number): void;
  stop(): Promise<void>;
}

interface Family {
  current: string;
  used: Set<string>;
  accessToken: string;
  revoked: boolean;
}

export async function startFakeOAuthProvider(options: { delayMs?: number } = {}): Promise<FakeOAuthProvider> {
  const clientId = `client-${randomBytes(4).toString('hex')}`;
  const clientSecret = `secret-${randomBytes(12).toString('hex')}`;
  const families = new Map<string, Family>(); // any refresh token ever issued → its family
  const issued: string[] = [];
  let delayMs = options.delayMs ?? 200;
  let calls = 0;
  let successes = 0;
  let failures:
    | { remaining: number; error: { status: number; error: string; description?: string } }
    | undefined;
  let held: { arrived: () => void; gate: Promise<'fail' | 'proceed'> } | undefined;

  const token = (prefix: string) => `${prefix}_${randomBytes(16).toString('hex')}`;
  const newFamily = () => {
    const family: Family = {
      current: token('rt'),
      used: new Set(),
      accessToken: token('at'),
      revoked: false,
    };
    families.set(family.current, family);
    issued.push(family.accessToken, family.current);
    return family;
  };

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    res.end(JSON.stringify(body));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    if (req.method !== 'POST' || !req.url?.startsWith('/oauth/token'))
      return send(res, 404, { error: 'not_found' });
    const params = (req.headers['content-type'] ?? '').includes('json')
      ? new URLSearchParams(Object.entries(JSON.parse(text || '{}') as Record<string, string>))
      : new URLSearchParams(text);
    const basic = /^Basic (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
    const [basicId, basicSecret] = basic
      ? Buffer.from(basic, 'base64').toString('utf8').split(':').map(decodeURIComponent)
      : [];
    const id = params.get('client_id') ?? basicId;
    const secret = params.get('client_secret') ?? basicSecret;
    if (id !== clientId || secret !== clientSecret) return send(res, 401, { error: 'invalid_client' });
    if (params.get('grant_type') !== 'refresh_token')
      return send(res, 400, { error: 'unsupported_grant_type' });

    calls++;
    if (held) {
      const current = held;
      held = undefined;
      current.arrived();
      if ((await current.gate) === 'fail') return send(res, 503, { error: 'temporarily_unavailable' });
    }
    await new Promise((r) => setTimeout(r, delayMs));
    if (failures && failures.remaining > 0) {
      failures.remaining--;
      return send(res, failures.error.status, {
        error: failures.error.error,
        error_description: failures.error.description ?? 'refused by the fake provider',
      });
    }
    const presented = params.get('refresh_token') ?? '';
    const family = families.get(presented);
    if (!family || family.revoked)
      return send(res, 400, {
        error: 'invalid_grant',
        error_description: 'unknown or revoked refresh token',
      });
    if (family.current !== presented) {
      // A used refresh token came back: assume it was stolen and revoke everything (RFC 9700 §4.14).
      family.revoked = true;
      return send(res, 400, {
        error: 'invalid_grant',
        error_description: 'refresh token reused; token family revoked',
      });
    }
    family.used.add(presented);
    family.current = token('rt');
    family.accessToken = token('at');
    families.set(family.current, family);
    issued.push(family.accessToken, family.current);
    successes++;
    return send(res, 200, {
      access_token: family.accessToken,
      refresh_token: family.current,
      token_type: 'bearer',
      expires_in: 3600,
    });
  };

  const https = await serveLoopbackHttps(handle, 'fake-oauth-');
  const { url, caFile } = https;

  return {
    url,
    tokenUrl: `${url}/oauth/token`,
    caFile,
    clientId,
    clientSecret,
    refreshCalls: () => calls,
    successfulRefreshes: () => successes,
    issue: () => {
      const family = newFamily();
      return { access_token: family.accessToken, refresh_token: family.current };
    },
    currentAccessToken: (refreshToken) => {
      const family = families.get(refreshToken);
      return family && !family.revoked ? family.accessToken : undefined;
    },
    issuedSecrets: () => [...issued],
    failNext: (n, error = { status: 400, error: 'invalid_grant', description: 'refresh token expired' }) => {
      failures = { remaining: n, error };
    },
    hold: () => {
      let arrived!: () => void;
      let release!: (outcome: 'fail' | 'proceed') => void;
      const received = new Promise<void>((r) => (arrived = r));
      const gate = new Promise<'fail' | 'proceed'>((r) => (release = r));
      held = { arrived, gate };
      return { received, release };
    },
    setDelay: (ms) => {
      delayMs = ms;
    },
    stop: https.stop,
  };
}

/** The providers-file entry of `key` as an OAUTH2 provider whose endpoints are the fake's. */
export function fakeOAuthProviderYaml(provider: FakeOAuthProvider, key = 'fake-oauth'): string {
  return [
    `${key}:`,
    '  display_name: Fake OAuth',
    '  categories: [dev-tools]',
    '  docs: https://example.com/docs/fake-oauth',
    '  auth_mode: OAUTH2',
    `  authorization_url: ${provider.url}/oauth/authorize`,
    `  token_url: ${provider.tokenUrl}`,
    '',
  ].join('\n');
}
