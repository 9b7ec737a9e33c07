import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import { CallAbort } from './call-abort';
import { UpstreamBody } from './upstream';

const sha = (data: Buffer) => createHash('sha256').update(data).digest('hex');

async function listen(server: Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('UpstreamBody', () => {
  const bodies = new Map<string, Buffer>([
    ['/short', Buffer.from('{"ok":true}')],
    ['/long', randomBytes(3 * 1024 * 1024)],
  ]);
  let provider: Server;
  let providerUrl: string;
  let agent: Agent;
  const servers: Server[] = [];

  beforeAll(async () => {
    provider = createServer((req, res) => {
      const body = bodies.get(req.url ?? '') ?? Buffer.alloc(0);
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length });
      res.end(body);
    });
    providerUrl = await listen(provider);
    // One connection, so every call reuses the one before it: a body left half read would show.
    agent = new Agent({ connections: 1 });
  });

  afterAll(async () => {
    await agent.close();
    for (const server of [provider, ...servers]) server.close();
  });

  /** A front that asks the provider for `path`, waits `delayMs` after its headers, then does `then` with the body. */
  async function front(path: string, delayMs: number, then: 'pipe' | 'dump'): Promise<string> {
    const server = createServer((_req, res) => {
      void (async () => {
        const response = await UpstreamBody.send(
          agent,
          { origin: providerUrl, path, method: 'GET' },
          new CallAbort(),
        );
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        if (then === 'dump') {
          await response.body.dump();
          res.end('dumped');
          return;
        }
        res.writeHead(response.statusCode, { 'content-length': String(response.headers['content-length']) });
        await response.body.pipeTo(res);
      })();
    });
    servers.push(server);
    return listen(server);
  }

  it.each([
    ['a short body', '/short', 0],
    ['a short body the caller takes late', '/short', 50],
    ['a body larger than what is held before the caller takes it', '/long', 50],
  ])('passes %s through whole', async (_label, path, delayMs) => {
    const url = await front(path, delayMs, 'pipe');
    const res = await request(`${url}/`);
    const received = Buffer.from(await res.body.arrayBuffer());
    expect(received.length).toBe(bodies.get(path)!.length);
    expect(sha(received)).toBe(sha(bodies.get(path)!));
  });

  it('throws away a body read ahead and leaves the connection fit for the next call', async () => {
    const dumping = await front('/long', 50, 'dump');
    const piping = await front('/long', 0, 'pipe');
    expect(await (await request(`${dumping}/`)).body.text()).toBe('dumped');
    const received = Buffer.from(await (await request(`${piping}/`)).body.arrayBuffer());
    expect(sha(received)).toBe(sha(bodies.get('/long')!));
  });

  it('reports a short body as closed once it was read with its headers, before anyone took it', async () => {
    const response = await UpstreamBody.send(
      agent,
      { origin: providerUrl, path: '/short', method: 'GET' },
      new CallAbort(),
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    // A 'close' listener added now would wait forever: `closed` is what a late listener checks first.
    expect(response.body.closed).toBe(true);
    await response.body.dump();
  });
});
