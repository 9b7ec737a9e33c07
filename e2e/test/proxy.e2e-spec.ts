import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { Nango } from '@nangohq/node';
import type { RunningService, Stack } from '@switchboard/testing';
import { call } from './support/http';
import { START_HOOK_TIMEOUT_MS } from './support/processes';
import {
  BIG_BYTES,
  BINARY_BODY,
  deterministicBytes,
  GZIP_BODY,
  headerDifferences,
  JSON_BODY,
  LATIN1_BODY,
  raw,
  rawDigest,
  rssBytes,
  startFakeProvider,
  startProxyEngineStack,
  type FakeProvider,
  type RawResponse,
} from './support/proxy-fakes';

/**
 * The proxy as a migrating Nango user sees it: for each upstream behaviour the proxied answer is the
 * provider's, byte for byte (status, end-to-end headers, body), and the unmodified @nangohq/node client's
 * proxy methods and options work against it. The byte-for-byte table runs through both gateway modes: the
 * stack's gateway (embedded engine, the default) and one more gateway process in remote mode, which
 * streams to the proxy service.
 */

const RETRY_BASE_MS = 40;
/** The engine's settings, for whichever process runs it: the gateway (embedded) and the proxy service (remote). */
const ENGINE_ENV = {
  SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1',
  SWITCHBOARD_PROXY_RETRY_BASE_MS: String(RETRY_BASE_MS),
  SWITCHBOARD_PROXY_RETRY_MAX_DELAY_MS: '2000',
};

describe('proxy: responses pass through unchanged', () => {
  let stack: Stack;
  let remoteGateway: RunningService;
  let fake: FakeProvider;
  let other: FakeProvider;
  let nango: Nango;
  const connection = { providerConfigKey: 'fake-oauth2', connectionId: 'conn-oauth2' };

  const proxied = (
    gatewayUrl: string,
    method: string,
    path: string,
    headers: Record<string, string> = {},
    body?: Buffer,
  ) =>
    raw(
      gatewayUrl,
      method,
      `/proxy${path}`,
      {
        authorization: `Bearer ${stack.secretKey}`,
        'provider-config-key': connection.providerConfigKey,
        'connection-id': connection.connectionId,
        ...headers,
      },
      body,
    );

  beforeAll(async () => {
    [fake, other] = await Promise.all([startFakeProvider('a'), startFakeProvider('b')]);
    stack = await startProxyEngineStack(ENGINE_ENV);
    remoteGateway = await stack.startReplica('gateway', { SWITCHBOARD_PROXY_MODE: 'remote' });
    nango = new Nango({ secretKey: stack.secretKey, host: stack.gatewayUrl });
    const integration = await call(stack.gatewayUrl, 'POST', '/integrations', {
      key: stack.secretKey,
      body: {
        provider: 'fake-oauth2',
        unique_key: 'fake-oauth2',
        credentials: { type: 'OAUTH2', client_id: 'cid', client_secret: 'csecret' },
      },
    });
    expect(integration.status).toBe(200);
    const imported = await call(stack.gatewayUrl, 'POST', '/connections', {
      key: stack.secretKey,
      body: {
        provider_config_key: 'fake-oauth2',
        connection_id: 'conn-oauth2',
        credentials: { type: 'OAUTH2', access_token: 'at-oauth2' },
        connection_config: { origin: fake.url },
      },
    });
    expect([200, 201]).toContain(imported.status);
  }, START_HOOK_TIMEOUT_MS);

  afterAll(async () => {
    await stack?.stop();
    await Promise.all([fake?.close(), other?.close()]);
  });

  const modes = [
    { mode: 'embedded', gatewayUrl: () => stack.gatewayUrl, processes: () => [stack.services.gateway] },
    {
      mode: 'remote',
      gatewayUrl: () => `http://127.0.0.1:${remoteGateway.port}`,
      processes: () => [remoteGateway, stack.services.proxy],
    },
  ];

  describe.each(modes)(
    'byte-for-byte against a direct call, $mode mode',
    ({ mode, gatewayUrl, processes }) => {
      const multipartBoundary = '----switchboard-e2e-boundary';
      const multipart = Buffer.concat([
        Buffer.from(
          `--${multipartBoundary}\r\nContent-Disposition: form-data; name="title"\r\n\r\nquarterly report ✓\r\n`,
        ),
        Buffer.from(
          `--${multipartBoundary}\r\nContent-Disposition: form-data; name="file"; filename="r.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
        ),
        BINARY_BODY,
        Buffer.from(`\r\n--${multipartBoundary}--\r\n`),
      ]);
      const upload = deterministicBytes(10 * 1024 * 1024, 11);

      const rows: {
        name: string;
        method: string;
        direct: string;
        proxied?: string;
        headers?: Record<string, string>;
        proxiedHeaders?: Record<string, string>;
        body?: Buffer;
      }[] = [
        { name: '1 KB JSON with cookies, ETag, Link', method: 'GET', direct: '/json' },
        { name: 'HEAD', method: 'HEAD', direct: '/json' },
        { name: 'OPTIONS', method: 'OPTIONS', direct: '/json' },
        {
          name: '304 Not Modified',
          method: 'GET',
          direct: '/json',
          headers: { 'if-none-match': '"v1"' },
          proxiedHeaders: { 'nango-proxy-if-none-match': '"v1"' },
        },
        {
          name: 'gzip left compressed',
          method: 'GET',
          direct: '/gzip',
          headers: { 'accept-encoding': 'gzip' },
        },
        { name: '204 No Content', method: 'DELETE', direct: '/empty' },
        { name: 'non-UTF-8 text', method: 'GET', direct: '/text' },
        { name: 'binary download', method: 'GET', direct: '/binary' },
        { name: 'provider 404, not wrapped', method: 'GET', direct: '/missing' },
        // The proxy remembers this 429 for the connection: the next row waits out its 1 s Retry-After.
        // The fake counts calls per path, so each mode gets paths of its own.
        {
          name: '429 with Retry-After (no retries asked)',
          method: 'GET',
          direct: `/rate-limited/direct-1-${mode}`,
          proxied: `/rate-limited/proxied-1-${mode}`,
        },
        {
          name: '503 (no retries asked)',
          method: 'GET',
          direct: `/flaky/direct-2-${mode}?fails=1`,
          proxied: `/flaky/proxied-2-${mode}?fails=1`,
        },
        {
          name: '10 MB binary upload',
          method: 'POST',
          direct: '/upload',
          headers: { 'content-type': 'application/octet-stream' },
          body: upload,
        },
        {
          name: 'multipart upload',
          method: 'POST',
          direct: '/upload',
          headers: { 'content-type': `multipart/form-data; boundary=${multipartBoundary}` },
          body: multipart,
        },
      ];

      it.each(rows)('$name', async (row) => {
        const direct: RawResponse = await raw(fake.url, row.method, row.direct, row.headers ?? {}, row.body);
        const through: RawResponse = await proxied(
          gatewayUrl(),
          row.method,
          row.proxied ?? row.direct,
          row.proxiedHeaders ?? row.headers ?? {},
          row.body,
        );
        expect(through.status).toBe(direct.status);
        expect(headerDifferences(direct.headers, through.headers)).toEqual([]);
        expect(through.body.equals(direct.body)).toBe(true);
      });

      it("adds the gateway's rate-limit and CORS headers to the provider's answer", async () => {
        const res = await proxied(gatewayUrl(), 'GET', '/json', { origin: 'https://app.example.com' });
        expect(res.status).toBe(200);
        expect(res.headers['x-ratelimit-limit']).toMatch(/^\d+$/);
        expect(res.headers['access-control-allow-origin']).toBe('*');
      });

      it("gzip bytes are the provider's compressed bytes unless Decompress: true", async () => {
        const plain = await proxied(gatewayUrl(), 'GET', '/gzip');
        expect(plain.headers['content-encoding']).toBe('gzip');
        expect(plain.body.equals(GZIP_BODY)).toBe(true);
        const decompressed = await proxied(gatewayUrl(), 'GET', '/gzip', { decompress: 'true' });
        expect(decompressed.status).toBe(200);
        expect(decompressed.headers['content-encoding']).toBeUndefined();
        expect(decompressed.body.equals(JSON_BODY)).toBe(true);
      });

      it('streams a chunked 256 MiB download unchanged, without any hop holding it in memory', async () => {
        const direct = await rawDigest(fake.url, '/big');
        const pids = processes().map((p) => p.process.pid!);
        const base = pids.map(rssBytes);
        const peak = [...base];
        const sampler = setInterval(() => {
          pids.forEach((pid, i) => (peak[i] = Math.max(peak[i]!, rssBytes(pid))));
        }, 25);
        const through = await rawDigest(gatewayUrl(), '/proxy/big', {
          authorization: `Bearer ${stack.secretKey}`,
          'provider-config-key': connection.providerConfigKey,
          'connection-id': connection.connectionId,
        }).finally(() => clearInterval(sampler));
        expect(direct.bytes).toBe(BIG_BYTES);
        expect({ status: through.status, bytes: through.bytes, sha256: through.sha256 }).toEqual({
          status: 200,
          bytes: direct.bytes,
          sha256: direct.sha256,
        });
        expect(headerDifferences(direct.headers, through.headers)).toEqual([]);
        const growth = processes().map((p, i) => ({
          name: p.name,
          mib: Math.round((peak[i]! - base[i]!) / 1048576),
        }));
        // Streaming costs at most GC slack (see BIG_BYTES); holding the body would cost all 256 MiB of it.
        expect(growth.filter((p) => p.mib > 100)).toEqual([]);
      });
    },
  );

  describe('the unmodified @nangohq/node client', () => {
    it('get / post / put / patch / delete and responseType', async () => {
      const json = await nango.get({ ...connection, endpoint: '/json' });
      expect(json.status).toBe(200);
      expect(json.data).toEqual(JSON.parse(JSON_BODY.toString('utf8')));
      expect(json.headers['set-cookie']).toEqual(['a=1; Path=/', 'b=2; HttpOnly']);

      const bytes = await nango.get({ ...connection, endpoint: 'binary', responseType: 'arraybuffer' });
      expect(Buffer.from(bytes.data as ArrayBuffer).equals(BINARY_BODY)).toBe(true);
      const text = await nango.get({ ...connection, endpoint: '/text', responseType: 'arraybuffer' });
      expect(Buffer.from(text.data as ArrayBuffer).equals(LATIN1_BODY)).toBe(true);

      const posted = await nango.post({
        ...connection,
        endpoint: '/echo',
        data: { hello: 'world' },
        params: { page: '2' },
      });
      expect(posted.data).toMatchObject({ method: 'POST', url: '/echo?page=2', body: '{"hello":"world"}' });
      expect((posted.data as { headers: Record<string, string> }).headers['content-type']).toMatch(
        /^application\/json/,
      );
      for (const method of ['put', 'patch'] as const) {
        const res = await nango[method]({ ...connection, endpoint: '/echo', data: { n: 1 } });
        expect(res.data).toMatchObject({ method: method.toUpperCase(), body: '{"n":1}' });
      }
      const propfind = await nango.proxy({
        ...connection,
        method: 'PROPFIND',
        endpoint: '/echo',
        data: '<propfind xmlns="DAV:"/>',
        headers: { 'Content-Type': 'application/xml', Depth: '1' },
      });
      expect(propfind.data).toMatchObject({
        method: 'PROPFIND',
        body: '<propfind xmlns="DAV:"/>',
        headers: { depth: '1', 'content-type': 'application/xml' },
      });
      const deleted = await nango.delete({ ...connection, endpoint: '/empty' });
      expect(deleted.status).toBe(204);
      const generic = await nango.proxy({ ...connection, method: 'GET', endpoint: '/json', params: 'x=1' });
      expect(generic.status).toBe(200);

      const stream = await nango.get({ ...connection, endpoint: '/binary', responseType: 'stream' });
      const hash = createHash('sha256');
      for await (const chunk of stream.data as Readable) hash.update(chunk as Buffer);
      expect(hash.digest('hex')).toBe(createHash('sha256').update(BINARY_BODY).digest('hex'));
    });

    it("passes a provider error through as the client's error, unwrapped", async () => {
      const failure = await nango.get({ ...connection, endpoint: '/missing' }).then(
        () => undefined,
        (error: { response?: { status: number; data: unknown } }) => error.response,
      );
      expect(failure).toEqual(
        expect.objectContaining({
          status: 404,
          data: { message: 'Not Found', documentation_url: 'https://docs.example.com' },
        }),
      );
    });

    it('uploads multipart FormData the client builds', async () => {
      const form = new FormData();
      form.append('title', 'report');
      form.append('file', new Blob([BINARY_BODY.subarray(0, 1024)]), 'r.bin');
      const res = await nango.post({ ...connection, endpoint: '/echo', data: form });
      const echoed = res.data as { headers: Record<string, string>; body: string };
      const boundary = /boundary=(.+)$/.exec(echoed.headers['content-type'] ?? '')?.[1];
      expect(boundary).toBeDefined();
      expect(echoed.body).toContain(`--${boundary}`);
      expect(echoed.body).toContain('name="title"\r\n\r\nreport');
      expect(echoed.body).toContain('filename="r.bin"');
    });

    it('retries: 503 five times then 200 takes exactly six provider calls, spaced by jittered exponential back-off', async () => {
      const res = await nango.get({ ...connection, endpoint: '/flaky/client-retries?fails=5', retries: 10 });
      expect(res.data).toEqual({ ok: true, attempt: 6 });
      const times = fake.calls('flaky/client-retries');
      expect(times).toHaveLength(6);
      for (let i = 1; i < times.length; i++) {
        const step = RETRY_BASE_MS * 2 ** (i - 1);
        const gap = times[i]! - times[i - 1]!;
        expect(gap).toBeGreaterThanOrEqual(step / 2 - 5);
        expect(gap).toBeLessThanOrEqual(step + 250);
      }
    });

    it('retries a dropped connection for an idempotent method', async () => {
      const res = await nango.get({ ...connection, endpoint: '/reset/client-reset?fails=1', retries: 2 });
      expect(res.data).toEqual({ ok: true, attempt: 2 });
    });

    it('retryOn: a POST is retried on a 5xx only when the caller lists it', async () => {
      const listed = await nango.post({
        ...connection,
        endpoint: '/flaky/post-listed?fails=2',
        data: { x: 1 },
        retries: 3,
        retryOn: [503],
      });
      expect(listed.data).toEqual({ ok: true, attempt: 3 });

      const unlisted = await nango
        .post({ ...connection, endpoint: '/flaky/post-unlisted?fails=2', data: { x: 1 }, retries: 3 })
        .then(
          () => undefined,
          (error: { response?: { status: number; data: unknown } }) => error.response,
        );
      expect(unlisted).toEqual(expect.objectContaining({ status: 503, data: 'failure 1' }));
      expect(fake.calls('flaky/post-unlisted')).toHaveLength(1);
    });

    it('a 429 with Retry-After is retried no earlier than the provider asked', async () => {
      const res = await nango.get({
        ...connection,
        endpoint: '/rate-limited/client-429?after=1',
        retries: 2,
      });
      expect(res.data).toEqual({ ok: true, attempt: 2 });
      const [first, second] = fake.calls('rate-limited/client-429');
      expect(second! - first!).toBeGreaterThanOrEqual(1000);
    });

    it('baseUrlOverride sends the call to another base; decompress returns plain bytes', async () => {
      const res = await nango.get({ ...connection, endpoint: '/json', baseUrlOverride: other.url });
      expect(res.headers['x-fake-provider']).toBe('b');
      expect(other.seen.at(-1)?.headers.authorization).toBe('Bearer at-oauth2');

      const compressed = await nango.get({ ...connection, endpoint: '/gzip', responseType: 'arraybuffer' });
      expect(Buffer.from(compressed.data as ArrayBuffer).equals(JSON_BODY)).toBe(true);
      const decompressed = await nango.get({
        ...connection,
        endpoint: '/gzip',
        decompress: true,
        responseType: 'arraybuffer',
      });
      expect(Buffer.from(decompressed.data as ArrayBuffer).equals(JSON_BODY)).toBe(true);
      expect(decompressed.headers['content-length']).toBeUndefined();
    });
  });

  // Last: it stops the proxy service.
  describe('without the proxy service', () => {
    it('the embedded gateway stays ready and keeps proxying; a remote one answers 503', async () => {
      await stack.stopService('proxy');
      const ready = await raw(stack.gatewayUrl, 'GET', '/ready');
      expect(ready.status).toBe(200);
      const embedded = await proxied(stack.gatewayUrl, 'GET', '/json');
      expect(embedded.status).toBe(200);
      expect(embedded.body.equals(JSON_BODY)).toBe(true);
      const remote = await proxied(`http://127.0.0.1:${remoteGateway.port}`, 'GET', '/json');
      expect({ status: remote.status, body: JSON.parse(remote.body.toString('utf8')) }).toEqual({
        status: 503,
        body: { error: { code: 'service_unavailable', message: 'The proxy service is not available' } },
      });
    });
  });
});
