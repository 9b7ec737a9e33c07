import { spawn, type ChildProcess } from 'node:child_process';
import { request, Agent } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';

/**
 * SIGTERM ends a service (test/shutdown-service.js, started with bootstrapService) promptly: requests in
 * flight are answered, kept-alive sockets do not hold it open, a request that never ends is cut at the
 * shutdown deadline (the process then exits 1), and a service whose log pipe is gone (its parent was
 * killed) still shuts down cleanly instead of dying on the first log line. Its own NATS server, so its
 * queue group meets no other process. The bounds leave room for a busy two-core machine.
 */

jest.setTimeout(60_000);

const SLACK_MS = 4_000;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  afterMs: number;
}

/** Sends SIGTERM; answers how the process ended, and how long after the signal. */
function terminate(child: ChildProcess): Promise<Exit> {
  const signalledAt = Date.now();
  const exit = new Promise<Exit>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal, afterMs: Date.now() - signalledAt })),
  );
  child.kill('SIGTERM');
  return exit;
}

async function waitForOutput(output: () => string, text: string, timeoutMs = 45_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!output().includes(text)) {
    if (Date.now() > until) throw new Error(`"${text}" never printed:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function get(port: number, path: string, agent: Agent): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path, agent }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    })
      .on('error', reject)
      .end();
  });
}

describe('a service on SIGTERM', () => {
  let nats: ChildProcess;
  let natsUrl: string;
  const started: ChildProcess[] = [];
  const agents: Agent[] = [];

  beforeAll(async () => {
    const port = await freePort();
    nats = spawn(process.env.NATS_SERVER_BIN ?? 'nats-server', ['-a', '127.0.0.1', '-p', String(port)], {
      stdio: 'ignore',
    });
    natsUrl = `nats://127.0.0.1:${port}`;
  });

  afterAll(async () => {
    for (const agent of agents) agent.destroy();
    for (const child of [...started, nats]) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });

  async function startService(env: Record<string, string> = {}) {
    const port = await freePort();
    const child = spawn(process.execPath, [join(__dirname, '../test/shutdown-service.js')], {
      env: { PATH: process.env.PATH, NATS_URL: natsUrl, PORT: String(port), SLOW_MS: '1500', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    started.push(child);
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    await waitForOutput(() => output, `listening on :${port}`);
    const agent = new Agent({ keepAlive: true });
    agents.push(agent);
    // A kept-alive socket left idle, as a client's connection pool leaves it.
    expect((await get(port, '/health', agent)).status).toBe(200);
    return { child, port, agent, output: () => output };
  }

  it('answers the request in flight, then exits 0 at once even with kept-alive sockets', async () => {
    const service = await startService();
    const inFlight = get(service.port, '/slow', service.agent);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const exit = terminate(service.child);
    expect(await inFlight).toEqual({ status: 200, body: JSON.stringify({ done: true }) });
    const result = await exit;
    expect({ code: result.code, signal: result.signal }).toEqual({ code: 0, signal: null });
    expect(result.afterMs).toBeLessThan(1_500 + SLACK_MS);
  });

  it('cuts a request that outlives the shutdown deadline and exits 1 once it passed', async () => {
    const service = await startService({ SHUTDOWN_TIMEOUT_MS: '2000' });
    const hanging = get(service.port, '/hang', service.agent).catch((error: Error) => error);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const result = await terminate(service.child);
    expect({ code: result.code, signal: result.signal }).toEqual({ code: 1, signal: null });
    expect(result.afterMs).toBeGreaterThanOrEqual(2_000);
    expect(result.afterMs).toBeLessThan(2_000 + SLACK_MS);
    // Cut, not answered.
    expect(String(await hanging)).toMatch(/socket hang up|ECONNRESET/);
    expect(service.output()).toContain('shutdown deadline');
  });

  it('shuts down cleanly when its log pipe is gone, as after its parent was killed', async () => {
    const service = await startService();
    service.child.stdout!.destroy();
    service.child.stderr!.destroy();
    const result = await terminate(service.child);
    expect({ code: result.code, signal: result.signal }).toEqual({ code: 0, signal: null });
    expect(result.afterMs).toBeLessThan(SLACK_MS);
  });
});
