import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface CollectedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP span kind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: { key: string; value: { stringValue?: string } }[];
}

export const SERVER = 2;
export const CLIENT = 3;

export const attribute = (span: CollectedSpan, key: string) =>
  span.attributes.find((a) => a.key === key)?.value.stringValue;

/** The span and its parents within `spans`, innermost first. */
export function ancestry(span: CollectedSpan, spans: CollectedSpan[]): CollectedSpan[] {
  const chain = [span];
  for (
    let parent = spans.find((s) => s.spanId === span.parentSpanId);
    parent;
    parent = spans.find((s) => s.spanId === parent!.parentSpanId)
  ) {
    chain.push(parent);
  }
  return chain;
}

/** The environment that makes every service of a stack export its spans to `collectorUrl`, quickly. */
export const otlpEnv = (collectorUrl: string) => ({
  OTEL_TRACES_EXPORTER: 'otlp',
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collectorUrl}/v1/traces`,
  OTEL_BSP_SCHEDULE_DELAY: '100',
});

/** A loopback OTLP/HTTP (JSON) collector: the services export to it exactly as they would to a real one. */
export function startCollector(): Promise<{ server: Server; url: string; spans: CollectedSpan[] }> {
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
        const service =
          rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '?';
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
