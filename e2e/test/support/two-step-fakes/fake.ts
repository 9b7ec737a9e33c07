import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { makeLoopbackCertificate } from '@switchboard/testing';
import { type RecordedCall, type TokenBody, type TwoStepCase, TWO_STEP_TTL_SECONDS } from './case';
import { TWO_STEP_CASES } from './cases';

/**
 * Heymarket (JWT, HMAC): no token call; each API call carries `Bearer <JWT>` signed HS256 with the API
 * secret key, its `iss` the API secret id. Its fixed 5-minute life is shortened like the TWO_STEP ones.
 */
export const HEYMARKET = {
  secretId: '3f2c1a9e-8b7d-4c6e-9f1a-2b3c4d5e6f70',
  secretKey: 'hmSecretKey0123456789abcdef',
  path: '/v1/team',
};

export interface TwoStepFake {
  url: string;
  caFile: string;
  /** The JWTs Heymarket's API accepted, with their claims. */
  heymarket: { token: string; iat: number; exp: number }[];
  tokenCalls: Map<string, RecordedCall[]>;
  apiCalls: Map<string, RecordedCall[]>;
  issued: Map<string, { token: string; expiresAt: number }[]>;
  stop(): Promise<void>;
}

function parseBody(headers: IncomingHttpHeaders, text: string): TokenBody {
  if (text === '') return undefined;
  const type = String(headers['content-type'] ?? '');
  if (type.startsWith('application/x-www-form-urlencoded'))
    return { form: Object.fromEntries(new URLSearchParams(text)) };
  return { json: JSON.parse(text) as Record<string, unknown> };
}

/** The token where the case says the API takes it; undefined when it is not there. */
export function presentedToken(c: TwoStepCase, call: RecordedCall): string | undefined {
  const placement = c.api.token;
  if ('query' in placement) return call.query[placement.query];
  const value = call.headers[placement.header];
  if (typeof value !== 'string' || !value.startsWith(placement.prefix)) return undefined;
  return value.slice(placement.prefix.length);
}

/** Checks a Heymarket bearer JWT; the reason it is refused otherwise. */
function heymarketJwt(authorization: string): { token: string; iat: number; exp: number } | string {
  const token = /^Bearer (.+)$/.exec(authorization)?.[1];
  const [head, body, signature] = token?.split('.') ?? [];
  if (!token || !head || !body || !signature) return 'no bearer JWT';
  const expected = createHmac('sha256', HEYMARKET.secretKey).update(`${head}.${body}`).digest();
  const given = Buffer.from(signature, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'bad signature';
  const header = JSON.parse(Buffer.from(head, 'base64url').toString('utf8')) as Record<string, unknown>;
  const claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Record<string, unknown>;
  if (header['alg'] !== 'HS256') return 'alg';
  if (claims['iss'] !== HEYMARKET.secretId) return 'iss';
  const iat = Number(claims['iat']);
  const exp = Number(claims['exp']);
  if (!(exp * 1000 > Date.now()) || !(iat * 1000 <= Date.now() + 1000)) return 'expired';
  return { token, iat, exp };
}

export async function startTwoStepFake(): Promise<TwoStepFake> {
  const cert = makeLoopbackCertificate('two-step-fake-');
  const byProvider = new Map(TWO_STEP_CASES.map((c) => [c.provider, c]));
  const list = <T>(map: Map<string, T[]>, key: string) => {
    const found = map.get(key) ?? [];
    map.set(key, found);
    return found;
  };
  const fake = {
    tokenCalls: new Map<string, RecordedCall[]>(),
    apiCalls: new Map<string, RecordedCall[]>(),
    issued: new Map<string, { token: string; expiresAt: number }[]>(),
    heymarket: [] as { token: string; iat: number; exp: number }[],
  };
  const server = createServer(
    { key: readFileSync(cert.keyFile), cert: readFileSync(cert.certFile) },
    (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const reply = (status: number, body: unknown) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(body));
        };
        const url = new URL(req.url ?? '/', 'https://127.0.0.1');
        const [, provider = '', ...rest] = url.pathname.split('/');
        if (provider === 'heymarket') {
          const checked = heymarketJwt(String(req.headers.authorization ?? ''));
          if (typeof checked === 'string') return reply(401, { error: checked });
          fake.heymarket.push(checked);
          return reply(200, { token: checked.token });
        }
        const c = byProvider.get(provider);
        if (!c) return reply(404, { error: 'unknown provider' });
        const call: RecordedCall = {
          method: req.method ?? 'GET',
          path: `/${rest.join('/')}`,
          query: Object.fromEntries(url.searchParams),
          headers: req.headers,
          body: parseBody(req.headers, Buffer.concat(chunks).toString('utf8')),
        };
        // The proxied calls are GETs on the API path; anything else is a token call, recorded as it came
        // so that the test compares it with the row (a wrong path or body shows as a difference).
        if (call.method === 'GET' && call.path === c.api.path) {
          list(fake.apiCalls, provider).push(call);
          const token = presentedToken(c, call);
          const issued = list(fake.issued, provider).find((t) => t.token === token);
          if (!issued) return reply(401, { error: 'unknown token' });
          if (issued.expiresAt <= Date.now()) return reply(401, { error: 'token expired' });
          return reply(200, { data: [], token });
        }
        const calls = list(fake.tokenCalls, provider);
        calls.push(call);
        const token = `${provider}-${calls.length}-${randomBytes(6).toString('hex')}`;
        const expiresAt = c.expiry === 'none' ? Infinity : Date.now() + TWO_STEP_TTL_SECONDS * 1000;
        list(fake.issued, provider).push({ token, expiresAt });
        return reply(200, c.token.answer(token, TWO_STEP_TTL_SECONDS));
      });
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    ...fake,
    url: `https://127.0.0.1:${port}`,
    caFile: cert.certFile,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          rmSync(cert.dir, { recursive: true, force: true });
          resolve();
        });
        // The proxy keeps its connections to the fake alive; close() alone would wait for them.
        server.closeAllConnections();
      }),
  };
}
