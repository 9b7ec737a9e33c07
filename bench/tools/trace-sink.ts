/**
 * A loopback OTLP/HTTP (JSON) trace receiver for latency breakdowns: the services of a bench stack export
 * their spans to it (`sinkEnv`), and the bench reads them back grouped by trace. Only span names, ids and
 * times are kept (no attributes), so nothing a span carries is stored or printed.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SinkSpan {
  service: string;
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  /** Milliseconds since the epoch. OpenTelemetry JS takes a span's start from `Date.now()` (whole
   * milliseconds) and its end from the monotonic clock, so durations are exact and starts are not:
   * compare durations, not start times. */
  startMs: number;
  durationMs: number;
}

interface OtlpJson {
  resourceSpans?: {
    resource?: { attributes?: { key: string; value?: { stringValue?: string } }[] };
    scopeSpans?: {
      spans?: {
        name: string;
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        startTimeUnixNano: string | number;
        endTimeUnixNano: string | number;
      }[];
    }[];
  }[];
}

export interface TraceSink {
  spans: SinkSpan[];
  /** The variables that make a service export its spans here, promptly. */
  env: Record<string, string>;
  close(): void;
}

export async function startTraceSink(): Promise<TraceSink> {
  const spans: SinkSpan[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpJson;
        for (const rs of body.resourceSpans ?? []) {
          const service =
            rs.resource?.attributes?.find((a) => a.key === 'service.name')?.value?.stringValue ?? '?';
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              const start = BigInt(s.startTimeUnixNano);
              spans.push({
                service,
                name: s.name,
                traceId: s.traceId,
                spanId: s.spanId,
                ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
                startMs: Number(start / 1000n) / 1000,
                durationMs: Number(BigInt(s.endTimeUnixNano) - start) / 1e6,
              });
            }
          }
        }
      } catch {
        // not OTLP JSON: ignored
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    spans,
    env: {
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://127.0.0.1:${port}/v1/traces`,
      OTEL_BSP_SCHEDULE_DELAY: '500',
    },
    close: () => server.close(),
  };
}

/** Spans by trace id. */
export function byTrace(spans: readonly SinkSpan[]): Map<string, SinkSpan[]> {
  const traces = new Map<string, SinkSpan[]>();
  for (const span of spans) {
    const list = traces.get(span.traceId) ?? [];
    list.push(span);
    traces.set(span.traceId, list);
  }
  return traces;
}

export const median = (values: number[]): number => {
  const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? NaN;
};
