import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SwitchboardError } from '@switchboard/contracts';
import { createEgressAgent, EgressPolicy, type Resolver } from '@switchboard/egress';
import { buildConnector } from 'undici';
import type { AuthPlan } from './auth-injection';
import { CallAbort } from './call-abort';
import { Exchange } from './exchange';
import { upstreamFailure } from './forwarder';
import { buildTarget, splitEndpoint } from './target';

/**
 * The SSRF table of reliability.md §2.6, run through the real URL builder, redirect follower and egress
 * connector. No packet may leave loopback even if that code is wrong: the socket opener under test is
 * wrapped by a guard that refuses (and records) any connection to anything but 127.0.0.1, and host
 * names are answered by a stub resolver, never by DNS.
 */

const STUB_DNS: Record<string, string[]> = {
  'fake-provider.test': ['127.0.0.1'],
  'rebind.test': ['127.0.0.1', '10.0.0.7'],
  'loopback2.test': ['127.0.0.2'],
  'v6-loopback.test': ['::1'],
  'metadata.test': ['169.254.169.254'],
  'private10.test': ['10.1.2.3'],
  'private172.test': ['172.16.0.9'],
  'private192.test': ['192.168.10.1'],
  'cgnat.test': ['100.64.0.1'],
  'ula.test': ['fd00:ec2::254'],
  'linklocal6.test': ['fe80::1'],
  'mapped.test': ['::ffff:10.0.0.1'],
  'nat64.test': ['64:ff9b::a9fe:a9fe'],
  'sixtofour.test': ['2002:c0a8:101::1'],
  'unspecified.test': ['0.0.0.0'],
};

const stubResolver: Resolver = async (hostname) => {
  const answers = STUB_DNS[hostname.toLowerCase()];
  if (!answers)
    throw Object.assign(new Error(`stub resolver: unknown host ${hostname}`), { code: 'ENOTFOUND' });
  return answers.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

const violations: string[] = [];
const connects: string[] = [];
const realConnect = buildConnector({ timeout: 2000 });
const guardedConnect: buildConnector.connector = (opts, callback) => {
  const host = opts.hostname.replace(/^\[|\]$/g, '');
  connects.push(`${host}:${opts.port}`);
  if (host !== '127.0.0.1') {
    violations.push(`${host}:${opts.port}`);
    return callback(new Error(`test guard: a connection to ${host} was attempted`), null);
  }
  return realConnect(opts, callback);
};

const noAuth: AuthPlan = {
  headers: { authorization: 'Bearer provider-token' },
  query: [],
  bodyFields: undefined,
  sign: undefined,
  refreshable: false,
};

/** Runs one proxied GET; answers the status it got, or the error code the caller would see. */
async function attempt(policy: EgressPolicy, base: string, endpoint = '/x'): Promise<string> {
  const agent = createEgressAgent({
    policy,
    connectTimeoutMs: 2000,
    resolver: stubResolver,
    connect: guardedConnect,
  });
  const exchange = new Exchange(agent, policy, { headersTimeoutMs: 2000, bodyTimeoutMs: 2000 }, 5);
  try {
    const { path, query } = splitEndpoint(`/proxy${endpoint}`);
    const target = buildTarget(base, 'override', path, query);
    const response = await exchange.send({
      method: 'GET',
      target,
      headers: {},
      body: undefined,
      form: undefined,
      auth: noAuth,
      forwardAuthOnRedirect: false,
      signal: new CallAbort(),
    });
    await response.body.dump();
    return `status ${response.statusCode}`;
  } catch (error) {
    const failure = error instanceof SwitchboardError ? error : upstreamFailure(error);
    return failure instanceof SwitchboardError ? failure.code : `unexpected ${String(failure)}`;
  } finally {
    await agent.close();
  }
}

describe('egress policy against the SSRF table', () => {
  let upstream: Server;
  let port: number;
  const seen: string[] = [];
  const strict = new EgressPolicy('');
  const loopbackAllowed = new EgressPolicy('127.0.0.1');

  beforeAll(async () => {
    upstream = createServer((req, res) => {
      seen.push(`${req.method} ${req.url} auth=${req.headers.authorization ?? ''}`);
      const to = new URL(req.url ?? '/', 'http://x').searchParams.get('to');
      if (to) {
        res.writeHead(302, { location: to });
        res.end();
        return;
      }
      res.end('ok');
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    port = (upstream.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await new Promise((resolve) => upstream.close(resolve));
  });

  afterEach(() => {
    expect(violations).toEqual([]);
  });

  it('reaches an allowed upstream (the control row)', async () => {
    expect(await attempt(loopbackAllowed, `http://127.0.0.1:${port}`)).toBe('status 200');
    const before = connects.length;
    expect(await attempt(loopbackAllowed, `http://fake-provider.test:${port}`)).toBe('status 200');
    // The socket opener got the checked address, never the name (which it could resolve again, differently).
    expect(connects.slice(before)).toEqual([`127.0.0.1:${port}`]);
  });

  const literalRows = [
    '127.0.0.1',
    '127.1',
    '2130706433',
    '0x7f.1',
    '0177.0.0.1',
    'localhost',
    'localhost.',
    '[::1]',
    '[::ffff:127.0.0.1]',
    '[::ffff:7f00:1]',
    '169.254.169.254',
    'metadata.google.internal',
    '10.0.0.1',
    '172.16.0.1',
    '192.168.0.1',
    '100.64.0.1',
    '[fe80::1]',
    '[fc00::1]',
    '[64:ff9b::a00:1]',
    '[2002:a00:1::]',
    '0.0.0.0',
  ];
  it.each(literalRows)('refuses http://%s before any connection', async (host) => {
    const before = connects.length;
    expect(await attempt(strict, `http://${host}:${port}/`)).toBe('egress_refused');
    expect(connects.length).toBe(before);
  });

  it.each(['127.0.0.2', '0x7f.0.0.2', '2130706434', '127.2', '[::1]', '[::ffff:127.0.0.2]'])(
    'refuses loopback %s outside the allow-list (127.0.0.1 only)',
    async (host) => {
      expect(await attempt(loopbackAllowed, `http://${host}:${port}/`)).toBe('egress_refused');
    },
  );

  it.each(['ftp://127.0.0.1/', 'file:///etc/passwd', 'gopher://127.0.0.1:70/', 'javascript:alert(1)'])(
    'refuses the scheme of %s',
    async (base) => {
      expect(await attempt(loopbackAllowed, base)).toBe('invalid_headers');
    },
  );

  it.each(Object.keys(STUB_DNS).filter((h) => h !== 'fake-provider.test'))(
    'refuses %s, a name whose DNS answer is not allowed, without connecting',
    async (host) => {
      const before = connects.length;
      expect(await attempt(loopbackAllowed, `http://${host}:${port}/`)).toBe('egress_refused');
      expect(connects.length).toBe(before);
    },
  );

  it.each(['//evil.test/x', '\\\\evil.test/x', '/\\evil.test', 'http://evil.test/x'])(
    'refuses the endpoint %s',
    async (endpoint) => {
      expect(await attempt(loopbackAllowed, `http://127.0.0.1:${port}/v3/`, `/${endpoint}`)).toBe(
        'invalid_uri_params',
      );
    },
  );

  const redirectTargets = [
    'http://127.0.0.2:1/',
    'http://[::1]:1/',
    'http://169.254.169.254/latest/meta-data/',
    'http://metadata.google.internal/',
    'http://10.0.0.1/',
    'http://localhost:1/',
    'http://0x7f.0.0.2:1/',
    'http://metadata.test/',
    'http://rebind.test/',
    'file:///etc/passwd',
  ];
  it.each(redirectTargets)('refuses a provider redirect to %s', async (to) => {
    const before = seen.length;
    expect(
      await attempt(loopbackAllowed, `http://127.0.0.1:${port}`, `/start?to=${encodeURIComponent(to)}`),
    ).toBe('egress_refused');
    expect(seen.length).toBe(before + 1);
  });

  it('follows a redirect that stays allowed, dropping credentials on a change of origin', async () => {
    const before = seen.length;
    const to = `http://fake-provider.test:${port}/landed`;
    expect(
      await attempt(loopbackAllowed, `http://127.0.0.1:${port}`, `/start?to=${encodeURIComponent(to)}`),
    ).toBe('status 200');
    expect(seen.slice(before)).toEqual([
      expect.stringMatching(/^GET \/start\?to=.* auth=Bearer provider-token$/),
      'GET /landed auth=',
    ]);
  });
});
