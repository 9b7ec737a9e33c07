import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';

/**
 * Shutdown must not hang on a collector that does not answer: the OTLP metric exporter would keep a
 * stopping service waiting for its export timeout (NodeSDK's default setup was measured at ~8.5 s).
 * Run in a child process from the build (`pnpm build` first), as a service runs it: the real http module,
 * the real exporter, a loopback "collector" that accepts the export and never answers.
 */
const CHILD = `
const o = require(${JSON.stringify(join(__dirname, '..', 'dist', 'index.js'))});
o.startTracing('shutdown-test');
o.metrics.getMeter('test').createCounter('test.requests').add(1);
const started = Date.now();
o.stopTracing(Number(process.argv[1])).then(() => console.log(Date.now() - started));
`;

describe('stopTracing with an OTLP metric exporter on', () => {
  let silent: Server;
  let exports = 0;

  beforeAll(async () => {
    silent = createServer(() => {
      exports++;
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  });
  afterAll(() => {
    silent.closeAllConnections();
    silent.close();
  });

  const stopMs = async (budgetMs: number) => {
    const { port } = silent.address() as AddressInfo;
    const { stdout } = await promisify(execFile)(process.execPath, ['-e', CHILD, String(budgetMs)], {
      env: {
        ...process.env,
        OTEL_TRACES_EXPORTER: 'none',
        OTEL_METRICS_EXPORTER: 'otlp',
        OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: `http://127.0.0.1:${port}/v1/metrics`,
        OTEL_EXPORTER_OTLP_METRICS_TIMEOUT: '5000',
      },
    });
    return Number(stdout.trim());
  };

  it('gives up after its budget while the export waits for an answer, and waits that long otherwise', async () => {
    const before = exports;
    const bounded = await stopMs(300);
    expect(exports).toBe(before + 1); // the final export was sent...
    expect(bounded).toBeGreaterThanOrEqual(290); // ...waited on for the budget...
    expect(bounded).toBeLessThan(2_000); // ...and no longer.
    // Without the bound, the stop would last the exporter's timeout.
    expect(await stopMs(60_000)).toBeGreaterThanOrEqual(4_900);
  }, 60_000);
});

/**
 * A service asked to serve its metrics to Prometheus either serves them or does not start: a port taken
 * by another process is reported with its address and the process exits, where the exporter alone would
 * log nothing and leave the scraper with no target.
 */
const METRICS_CHILD = `
const o = require(${JSON.stringify(join(__dirname, '..', 'dist', 'index.js'))});
o.startTracing('metrics-test');
o.metrics.getMeter('test').createCounter('test.requests').add(1);
setTimeout(() => process.exit(0), 20_000);
`;

describe('startTracing with the Prometheus exporter', () => {
  const start = (port: number) =>
    spawn(process.execPath, ['-e', METRICS_CHILD], {
      env: {
        ...process.env,
        OTEL_TRACES_EXPORTER: 'none',
        OTEL_METRICS_EXPORTER: 'prometheus',
        OTEL_EXPORTER_PROMETHEUS_HOST: '127.0.0.1',
        OTEL_EXPORTER_PROMETHEUS_PORT: String(port),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  const exited = (child: ChildProcess) =>
    new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  it('exits at start-up, naming the address, when the port is taken', async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const { port } = holder.address() as AddressInfo;
    try {
      const child = start(port);
      let stderr = '';
      child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      expect(await exited(child)).toBe(1);
      expect(stderr).toContain(
        `metrics-test: the Prometheus metrics endpoint cannot listen on 127.0.0.1:${port} (EADDRINUSE)`,
      );
    } finally {
      holder.close();
    }
  }, 30_000);

  it('serves the metrics on a free port', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const child = start(port);
    const ended = exited(child);
    try {
      let body = '';
      for (let i = 0; i < 100 && !body; i++) {
        body = await fetch(`http://127.0.0.1:${port}/metrics`).then(
          (res) => res.text(),
          () => new Promise<string>((resolve) => setTimeout(() => resolve(''), 100)),
        );
      }
      expect(body).toContain('test_requests_total');
      expect(body).toContain('service_name="metrics-test"');
    } finally {
      child.kill();
      await ended;
    }
  }, 30_000);
});
