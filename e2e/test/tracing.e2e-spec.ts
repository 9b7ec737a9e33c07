import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startStack, type Stack } from '@switchboard/testing';

interface CollectedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  attributes: unknown;
}

/** A loopback OTLP/HTTP (JSON) collector: the services export to it exactly as they would to a real one. */
function startCollector(): Promise<{ server: Server; url: string; spans: CollectedSpan[] }> {
  const spans: CollectedSpan[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans: {
          resource: { attributes: { key: string; value: { stringValue?: string } }[] };
          scopeSpans: { spans: Omit<CollectedSpan, 'service'>[] }[];
        }[];
      };
      for (const rs of body.resourceSpans ?? []) {
        const service = rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '?';
        for (const ss of rs.scopeSpans) for (const s of ss.spans) spans.push({ ...s, service });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans });
    }),
  );
}

describe('tracing across services', () => {
  let stack: Stack;
  let collector: Awaited<ReturnType<typeof startCollector>>;

  beforeAll(async () => {
    collector = await startCollector();
    stack = await startStack({
      env: {
        OTEL_TRACES_EXPORTER: 'otlp',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.url}/v1/traces`,
        OTEL_BSP_SCHEDULE_DELAY: '100',
      },
    });
  });

  afterAll(async () => {
    await stack?.stop();
    collector?.server.close();
  });

  it('makes one public request one trace, from the gateway into the owning service', async () => {
    const traceId = randomBytes(16).toString('hex');
    const res = await fetch(`${stack.gatewayUrl}/integrations`, {
      headers: {
        Authorization: `Bearer ${stack.secretKey}`,
        traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`,
      },
    });
    expect(res.status).toBe(200);

    const deadline = Date.now() + 15_000;
    const ours = () => collector.spans.filter((s) => s.traceId === traceId);
    const handled = () => ours().find((s) => s.service === 'auth-connect' && s.name === 'auth.v1.integrations.list process');
    while (!handled() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));

    const spans = ours();
    const services = new Set(spans.map((s) => s.service));
    expect(services).toEqual(new Set(['gateway', 'auth-connect']));

    // The span in auth-connect is the child of the gateway's NATS request span, itself inside the HTTP span.
    const server = handled()!;
    const client = spans.find((s) => s.spanId === server.parentSpanId);
    expect(client).toMatchObject({ service: 'gateway', name: 'auth.v1.integrations.list send' });
    expect(spans.some((s) => s.service === 'gateway' && s.spanId === client!.parentSpanId)).toBe(true);
    // The database work of the handler is inside the same trace.
    expect(spans.some((s) => s.service === 'auth-connect' && s.name.startsWith('pg.'))).toBe(true);
  });

  it('never records the secret key or a query string in a span', async () => {
    // Connect flows carry session tokens in the query; a sentinel stands in for one.
    const sentinel = `sentinel${randomBytes(8).toString('hex')}`;
    await fetch(`${stack.gatewayUrl}/providers?search=${sentinel}`, { headers: { Authorization: `Bearer ${stack.secretKey}` } });
    await new Promise((r) => setTimeout(r, 1000));
    expect(collector.spans.some((s) => s.service === 'gateway' && s.name === 'GET')).toBe(true);
    const recorded = JSON.stringify(collector.spans);
    expect(recorded).not.toContain(stack.secretKey);
    expect(recorded).not.toContain(sentinel);
  });
});
