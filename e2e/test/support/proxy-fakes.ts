import { createHash, createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  Agent,
  createServer,
  request,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import {
  freePort,
  oauth1SignatureBase,
  oauth1SigningKey,
  parseOAuthAuthorization,
  startStack,
  type Stack,
} from '@switchboard/testing';
import { STACK_READY_TIMEOUT_MS } from './processes';
import { writeProvidersFile } from './providers-file';

/** Fixed so a direct and a proxied answer of the same route are byte-identical, headers included. */
export const FIXED_DATE = 'Tue, 04 Mar 2025 10:00:00 GMT';

export const JSON_BODY = Buffer.from(
  JSON.stringify({
    items: Array.from({ length: 14 }, (_, i) => ({ id: i, name: `item-${i}`, note: 'ünïcödé ✓' })),
  }),
);
export const GZIP_BODY = gzipSync(JSON_BODY);
/** Not valid UTF-8: a proxy that decoded and re-encoded text would change these bytes. */
export const LATIN1_BODY = Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x20, 0xff, 0xfe, 0x00, 0x0a]);
export const BINARY_BODY = deterministicBytes(256 * 1024, 7);
// Large enough that a hop holding the body shows far above what streaming costs: V8 frees the chunks a
// stream has passed on only when it collects, and it waits for about 64 MiB of them (its external-memory
// trigger), so a streaming process peaks near that whatever the body's size (56-66 MiB seen on Node 24).
export const BIG_BYTES = 256 * 1024 * 1024;
export const OAUTH1_SECRETS = {
  consumerSecret: 'oauth1-consumer-secret',
  tokenSecret: 'oauth1-token-secret',
};

export function deterministicBytes(length: number, seed: number): Buffer {
  const out = Buffer.alloc(length);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

export interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  at: number;
}

export interface FakeProvider {
  url: string;
  port: number;
  /** Every request, in arrival order. */
  seen: Seen[];
  /** Calls of one route key (`/flaky/<key>`, `/rate-limited/<key>`, ...), with their arrival times. */
  calls(key: string): number[];
  /** Sockets closed by the peer while a /hang request was open. */
  hangClosed: number;
  /** The access token /needs-fresh-token accepts; /oauth/token issues the next one. */
  freshToken: string;
  tokenRequests: number;
  close(): Promise<void>;
}

/** An RFC 5849 signature check written independently of the library the proxy signs with. */
export function oauth1Valid(
  header: string | undefined,
  method: string,
  url: URL,
  form: Record<string, string>,
  algo: 'sha1' | 'sha256',
): boolean {
  const params = parseOAuthAuthorization(header);
  if (!params) return false;
  const base = oauth1SignatureBase(method, url, params, Object.entries(form));
  const key = oauth1SigningKey(OAUTH1_SECRETS.consumerSecret, OAUTH1_SECRETS.tokenSecret);
  return createHmac(algo, key).update(base).digest('base64') === params['oauth_signature'];
}

async function readAll(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * A provider on 127.0.0.1 with one route per behaviour the proxy must pass through or react to.
 * Date is fixed and keep-alive is on, so two calls of a route answer the same bytes.
 */
export async function startFakeProvider(name = 'fake'): Promise<FakeProvider> {
  const counters = new Map<string, number[]>();
  const count = (key: string) => {
    const list = counters.get(key) ?? [];
    list.push(Date.now());
    counters.set(key, list);
    return list.length;
  };
  const state = { hangClosed: 0, freshToken: 'fresh-token-0', tokenRequests: 0 };
  const seen: Seen[] = [];
  const sockets = new Set<Socket>();

  // A handler that throws fails the request it was answering, not the test process.
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    res.sendDate = false;
    const url = new URL(req.url ?? '/', 'http://fake');
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, at: Date.now() });
    const send = (status: number, headers: Record<string, string | string[]>, body?: Buffer | string) => {
      res.writeHead(status, { date: FIXED_DATE, 'x-fake-provider': name, ...headers });
      res.end(body);
    };
    // Base paths of the fake providers (`/v2`, `/api`) lead to the same routes.
    const parts = url.pathname.split('/').filter(Boolean);
    if (parts[0] === 'v2' || parts[0] === 'api') parts.shift();
    const route = `/${parts[0] ?? ''}`;
    switch (route) {
      case '/json': {
        const headers = {
          'content-type': 'application/json; charset=utf-8',
          etag: '"v1"',
          'cache-control': 'private, max-age=60',
          'set-cookie': ['a=1; Path=/', 'b=2; HttpOnly'],
          vary: 'Accept-Encoding',
          'x-ratelimit-remaining': '4999',
          link: '<https://api.example.com/json?page=2>; rel="next"',
        };
        if (req.headers['if-none-match'] === '"v1"')
          return send(304, { etag: '"v1"', 'cache-control': headers['cache-control'] });
        return send(
          200,
          { ...headers, 'content-length': String(JSON_BODY.length) },
          req.method === 'HEAD' ? undefined : JSON_BODY,
        );
      }
      case '/gzip':
        return send(
          200,
          {
            'content-type': 'application/json',
            'content-encoding': 'gzip',
            'content-length': String(GZIP_BODY.length),
          },
          GZIP_BODY,
        );
      case '/text':
        return send(200, { 'content-type': 'text/plain; charset=iso-8859-1' }, LATIN1_BODY);
      case '/binary':
        return send(
          200,
          {
            'content-type': 'application/octet-stream',
            'content-disposition': 'attachment; filename="blob.bin"',
          },
          BINARY_BODY,
        );
      case '/empty':
        return send(204, { 'x-deleted': 'yes' });
      case '/missing':
        return send(
          404,
          { 'content-type': 'application/json' },
          JSON.stringify({ message: 'Not Found', documentation_url: 'https://docs.example.com' }),
        );
      case '/big': {
        res.writeHead(200, { date: FIXED_DATE, 'content-type': 'application/octet-stream' });
        const chunk = deterministicBytes(64 * 1024, 3);
        let sent = 0;
        const pump = () => {
          while (sent < BIG_BYTES) {
            sent += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        return pump();
      }
      case '/upload': {
        const body = await readAll(req);
        return send(
          200,
          { 'content-type': 'application/json' },
          JSON.stringify({
            bytes: body.length,
            sha256: createHash('sha256').update(body).digest('hex'),
            contentType: req.headers['content-type'] ?? null,
            contentLength: req.headers['content-length'] ?? null,
          }),
        );
      }
      case '/echo': {
        const body = await readAll(req);
        return send(
          200,
          { 'content-type': 'application/json' },
          JSON.stringify({
            method: req.method,
            url: req.url,
            headers: req.headers,
            body: body.toString('utf8'),
          }),
        );
      }
      case '/flaky': {
        const n = count(`flaky/${parts[1]}`);
        const fails = Number(url.searchParams.get('fails') ?? 5);
        if (n <= fails)
          return send(
            Number(url.searchParams.get('status') ?? 503),
            { 'content-type': 'text/plain' },
            `failure ${n}`,
          );
        return send(200, { 'content-type': 'application/json' }, JSON.stringify({ ok: true, attempt: n }));
      }
      case '/reset': {
        // The connection drops before any answer on the first `fails` calls.
        const n = count(`reset/${parts[1]}`);
        if (n <= Number(url.searchParams.get('fails') ?? 1)) return void req.socket.destroy();
        return send(200, { 'content-type': 'application/json' }, JSON.stringify({ ok: true, attempt: n }));
      }
      case '/rate-limited': {
        const n = count(`rate-limited/${parts[1]}`);
        if (n === 1)
          return send(
            429,
            { 'retry-after': url.searchParams.get('after') ?? '1', 'content-type': 'application/json' },
            '{"error":"slow down"}',
          );
        return send(200, { 'content-type': 'application/json' }, JSON.stringify({ ok: true, attempt: n }));
      }
      case '/quota': {
        // Remaining quota 0 on the first call, with the reset as epoch seconds (the catalog's `retry.at`).
        const n = count(`quota/${parts[1]}`);
        const reset = Math.ceil(Date.now() / 1000) + 1;
        return send(
          200,
          {
            'x-ratelimit-remaining': n === 1 ? '0' : '10',
            'x-ratelimit-reset': String(reset),
            'content-type': 'application/json',
          },
          JSON.stringify({ n }),
        );
      }
      case '/hang':
        req.socket.once('close', () => {
          state.hangClosed++;
        });
        return undefined;
      case '/redirect':
        return send(302, { location: url.searchParams.get('to') ?? '/' });
      case '/oauth1': {
        const body = (await readAll(req)).toString('utf8');
        const form = req.headers['content-type']?.startsWith('application/x-www-form-urlencoded')
          ? Object.fromEntries(new URLSearchParams(body))
          : {};
        const algo = url.searchParams.get('algo') === 'sha256' ? 'sha256' : 'sha1';
        const valid = oauth1Valid(
          req.headers.authorization,
          req.method ?? 'GET',
          new URL(req.url ?? '/', `http://${req.headers.host}`),
          form,
          algo,
        );
        return send(
          valid ? 200 : 401,
          { 'content-type': 'application/json' },
          JSON.stringify({ valid, authorization: req.headers.authorization ?? null }),
        );
      }
      case '/needs-fresh-token':
        if (req.headers.authorization === `Bearer ${state.freshToken}`)
          return send(200, { 'content-type': 'application/json' }, '{"ok":true}');
        return send(
          401,
          { 'content-type': 'application/json', 'www-authenticate': 'Bearer error="invalid_token"' },
          '{"error":"expired"}',
        );
      case '/oauth': {
        await readAll(req);
        state.tokenRequests++;
        state.freshToken = `fresh-token-${state.tokenRequests}`;
        return send(
          200,
          { 'content-type': 'application/json' },
          JSON.stringify({
            access_token: state.freshToken,
            refresh_token: `rt-${state.tokenRequests}`,
            expires_in: 3600,
            token_type: 'bearer',
          }),
        );
      }
      default:
        return send(404, { 'content-type': 'text/plain' }, 'no such route');
    }
  };
  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => res.destroy(error as Error));
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    seen,
    calls: (key) => counters.get(key) ?? [],
    get hangClosed() {
      return state.hangClosed;
    },
    get freshToken() {
      return state.freshToken;
    },
    get tokenRequests() {
      return state.tokenRequests;
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  } as FakeProvider;
}

/**
 * The operator providers file the stack is started with. The catalog accepts only https URLs or a
 * template starting with a placeholder, so every fake provider takes its origin from the connection's
 * `connection_config.origin` (as Salesforce takes its instance URL).
 */
export function writeProxyProvidersFile(): string {
  // A host field: the catalog validator wants it pinned to the provider's own origin (the fakes on loopback).
  const origin = { origin: { type: 'string', title: 'Origin', pattern: '^http://127\\.0\\.0\\.1:[0-9]+$' } };
  const common = { categories: ['dev-tools'], docs: 'https://example.com/docs' };
  const providers = {
    'fake-oauth2': {
      ...common,
      display_name: 'Fake OAuth2',
      auth_mode: 'OAUTH2',
      authorization_url: '${connectionConfig.origin}/oauth/authorize',
      token_url: '${connectionConfig.origin}/oauth/token',
      proxy: {
        base_url: '${connectionConfig.origin}',
        retry: { at: ['x-ratelimit-reset'], remaining: 'x-ratelimit-remaining' },
      },
      connection_config: origin,
    },
    'fake-api-key': {
      ...common,
      display_name: 'Fake API key (header)',
      auth_mode: 'API_KEY',
      proxy: {
        base_url: '${connectionConfig.origin}/v2',
        headers: { 'x-api-key': '${apiKey}', 'x-account': '${connectionConfig.account}' },
      },
      connection_config: { ...origin, account: { type: 'string', title: 'Account' } },
    },
    'fake-api-key-query': {
      ...common,
      display_name: 'Fake API key (query)',
      auth_mode: 'API_KEY',
      proxy: { base_url: '${connectionConfig.origin}', query: { api_key: '${apiKey}' } },
      connection_config: origin,
    },
    'fake-api-key-body': {
      ...common,
      display_name: 'Fake API key (JSON body)',
      auth_mode: 'API_KEY',
      proxy: { base_url: '${connectionConfig.origin}', body: { api_token: '${apiKey}' } },
      connection_config: origin,
    },
    'fake-basic': {
      ...common,
      display_name: 'Fake basic',
      auth_mode: 'BASIC',
      proxy: { base_url: '${connectionConfig.origin}' },
      connection_config: origin,
    },
    'fake-oauth1': {
      ...common,
      display_name: 'Fake OAuth1',
      auth_mode: 'OAUTH1',
      request_url: '${connectionConfig.origin}/oauth1/request',
      authorization_url: '${connectionConfig.origin}/oauth1/authorize',
      token_url: '${connectionConfig.origin}/oauth1/token',
      signature_method: 'HMAC-SHA1',
      proxy: { base_url: '${connectionConfig.origin}' },
      connection_config: origin,
    },
    'fake-tba': {
      ...common,
      display_name: 'Fake TBA',
      auth_mode: 'TBA',
      proxy: { base_url: '${connectionConfig.origin}' },
      connection_config: { ...origin, accountId: { type: 'string', title: 'Account' } },
    },
    // Like Etsy: the integration's client secret travels in a header of every call.
    'fake-client-secret-header': {
      ...common,
      display_name: 'Fake client-secret header',
      auth_mode: 'OAUTH2',
      authorization_url: '${connectionConfig.origin}/oauth/authorize',
      token_url: '${connectionConfig.origin}/oauth/token',
      proxy: {
        base_url: '${connectionConfig.origin}',
        headers: { 'x-api-key': '${clientId}:${clientSecret}' },
      },
      connection_config: origin,
    },
    'fake-no-base': { ...common, display_name: 'Fake without base URL', auth_mode: 'API_KEY' },
  };
  return writeProvidersFile(providers);
}

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/**
 * A raw answer in a form two answers can be compared by (`toEqual`): the headers named in `volatile` (their
 * values legitimately differ between two answers: dates, counters) only as present; the body as bytes.
 */
export function comparable(
  res: RawResponse,
  volatile: ReadonlySet<string>,
): { status: number; headers: IncomingHttpHeaders; body: string } {
  const headers: IncomingHttpHeaders = {};
  for (const [name, value] of Object.entries(res.headers))
    headers[name] = volatile.has(name) ? '(present)' : value;
  return { status: res.status, headers, body: res.body.toString('latin1') };
}

const rawAgent = new Agent({ keepAlive: true });

/** Plain node:http, so nothing between the test and the wire decodes or re-frames the bytes. */
export function raw(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: Buffer,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { method, headers, agent: rawAgent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Streams a response through a hash, for bodies too large to hold. */
export function rawDigest(
  base: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: IncomingHttpHeaders; bytes: number; sha256: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { method: 'GET', headers, agent: rawAgent }, (res) => {
      const hash = createHash('sha256');
      let bytes = 0;
      res.on('data', (c: Buffer) => {
        bytes += c.length;
        hash.update(c);
      });
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, bytes, sha256: hash.digest('hex') }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

const PER_HOP = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'proxy-connection',
]);
/** Headers only Switchboard adds (its own rate limit and CORS); everything else must be the provider's. */
const OURS = /^(x-ratelimit-(limit|remaining|reset)|access-control-[a-z-]+)$/;

/** The provider's end-to-end headers must come back unchanged; the only additions allowed are ours. */
export function headerDifferences(direct: IncomingHttpHeaders, proxied: IncomingHttpHeaders): string[] {
  const problems: string[] = [];
  for (const [name, value] of Object.entries(direct)) {
    if (PER_HOP.has(name)) continue;
    if (JSON.stringify(proxied[name]) !== JSON.stringify(value))
      problems.push(`${name}: direct ${JSON.stringify(value)} proxied ${JSON.stringify(proxied[name])}`);
  }
  for (const name of Object.keys(proxied)) {
    if (PER_HOP.has(name) || name in direct) continue;
    if (!OURS.test(name)) problems.push(`${name}: added by the proxy (${JSON.stringify(proxied[name])})`);
  }
  return problems;
}

/** Resident memory of a process, from /proc (Linux). */
export function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
  return Number(kb ?? 0) * 1024;
}

/**
 * A stack with these fake providers in its catalog and `engineEnv` (egress, retry and timeout settings) in
 * both places the proxy engine runs: the gateway (embedded mode) and the proxy service.
 */
export async function startProxyEngineStack(engineEnv: Record<string, string>): Promise<Stack> {
  return startStack({
    env: { SWITCHBOARD_PROVIDERS_FILE: writeProxyProvidersFile() },
    serviceEnv: {
      'auth-connect': { CONNECT_PORT: String(await freePort()), CONNECT_HOST: '127.0.0.1' },
      gateway: engineEnv,
      proxy: engineEnv,
    },
    readyTimeoutMs: STACK_READY_TIMEOUT_MS,
  });
}
