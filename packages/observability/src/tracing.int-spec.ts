import { execFile } from 'node:child_process';
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
