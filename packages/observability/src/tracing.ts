import {
  context,
  diag,
  DiagLogLevel,
  propagation,
  trace,
  type Context,
  type DiagLogger,
  type TextMapGetter,
  type TextMapSetter,
} from '@opentelemetry/api';
import { W3CBaggagePropagator, W3CTraceContextPropagator, CompositePropagator } from '@opentelemetry/core';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { idGenerator } from './foreign-spans';
import { METRIC_VIEWS } from './metrics';

let sdk: NodeSDK | undefined;

/**
 * Starts OpenTelemetry for this process. Call it before anything imports `http`, `pg` or Nest, i.e. as
 * the first import of a service's entry (`service.ts`), or those modules are not patched. The exporter is chosen by the standard
 * variables (`OTEL_TRACES_EXPORTER`, `OTEL_EXPORTER_OTLP_ENDPOINT`, ...); `OTEL_SERVICE_NAME` wins over
 * the name given here.
 */
export interface TracingOptions {
  version?: string;
  /**
   * Install the undici instrumentation (default true). The gateway and the proxy service turn it off and
   * record their undici calls themselves with `startClientSpan`: the instrumentation's listeners run on every
   * request, even suppressed ones, and cost more than the spans.
   */
  undici?: boolean;
}

export function startTracing(serviceName: string, options: TracingOptions = {}): void {
  if (sdk) return;
  // The specification's switch for the whole SDK: nothing is patched, so nothing is paid per request.
  if (process.env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return;
  // NodeSDK picks the metric readers from the standard variables (`OTEL_METRICS_EXPORTER=otlp|prometheus|
  // console|none`, `OTEL_EXPORTER_OTLP_METRICS_*`, `OTEL_METRIC_EXPORT_INTERVAL`,
  // `OTEL_EXPORTER_PROMETHEUS_HOST/PORT`). Unset means none here (NodeSDK's default is otlp): a service
  // should not push to a collector nobody configured. Logs stay off (they go to stdout).
  process.env.OTEL_METRICS_EXPORTER ??= 'none';
  process.env.OTEL_LOGS_EXPORTER ??= 'none';
  const name = process.env.OTEL_SERVICE_NAME ?? serviceName;
  diag.setLogger(telemetryErrors(name), DiagLogLevel.ERROR);
  sdk = new NodeSDK({
    views: METRIC_VIEWS,
    resource: resourceFromAttributes({
      [ATTR_SERVICE_NAME]: name,
      [ATTR_SERVICE_VERSION]: options.version ?? '0.1.0',
    }),
    // Random ids, except for spans re-recorded from another runtime (recordForeignSpans).
    idGenerator,
    textMapPropagator: new CompositePropagator({
      propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()],
    }),
    instrumentations: [
      new HttpInstrumentation({
        // Health probes would otherwise flood the trace store with one-span traces.
        ignoreIncomingRequestHook: (req) => /^\/(health|ready)\b/.test(req.url ?? ''),
        // Never record query strings: connect flows carry session tokens there, some APIs take keys there.
        requestHook: (span, req) => {
          const withoutQuery = (path: string) => path.split('?')[0] ?? '';
          if ('url' in req && typeof req.url === 'string') {
            const path = withoutQuery(req.url);
            const query = req.url.slice(path.length + 1);
            if (query) span.setAttribute('url.query', redactQuery(query));
            span.setAttribute('http.target', path);
            span.setAttribute('http.url', `http://${req.headers.host ?? 'localhost'}${path}`);
          } else if ('path' in req && typeof req.path === 'string') {
            const path = withoutQuery(req.path);
            span.setAttribute('http.target', path);
            span.setAttribute('http.url', `${req.protocol}//${req.host}${path}`);
          }
        },
      }),
      ...(options.undici === false
        ? []
        : [
            new UndiciInstrumentation({
              // Outgoing URLs may carry credentials in the query: keep only the path.
              startSpanHook: (request) => ({
                'url.full': `${request.origin}${request.path.split('?')[0] ?? ''}`,
                'url.query': undefined,
              }),
            }),
          ]),
      new PgInstrumentation({ enhancedDatabaseReporting: false }),
      // No Nest instrumentation: it records the full request URL, query string included, with no hook
      // to redact it; the HTTP server span and the NATS spans already show the request's path.
    ],
  });
  sdk.start();
}

/**
 * OpenTelemetry reports its own failures through `diag`, which prints nothing until a logger is set. They
 * go to stderr, as messages only (an exporter's error may carry a response body). One of them stops the
 * service: its Prometheus endpoint not listening (the port taken, or not allowed), since the scraper would
 * then find nothing and nobody would be told why; the process exits at start-up with the address.
 */
function telemetryErrors(serviceName: string): DiagLogger {
  const ignore = () => undefined;
  const text = (value: unknown) =>
    value instanceof Error ? value.message : typeof value === 'string' ? value : '';
  return {
    error: (message: unknown, ...args: unknown[]) => {
      const listen = [message, ...args].find(
        (value): value is NodeJS.ErrnoException & { address?: string; port?: number } =>
          value instanceof Error && (value as NodeJS.ErrnoException).syscall === 'listen',
      );
      if (listen) {
        process.stderr.write(
          `${serviceName}: the Prometheus metrics endpoint cannot listen on ${listen.address}:${listen.port} (${listen.code})\n`,
        );
        process.exit(1);
      }
      process.stderr.write(
        `${serviceName}: OpenTelemetry: ${[message, ...args].map(text).join(' ').trim()}\n`,
      );
    },
    warn: ignore,
    info: ignore,
    debug: ignore,
    verbose: ignore,
  };
}

/**
 * Flushes and stops tracing and metrics; safe to call when they never started. Bounded: an exporter
 * aimed at a collector that is down retries for its whole timeout (NodeSDK's shutdown was measured at
 * ~8.5 s with the default OTLP metric exporter and no collector), and a stopping service must not wait
 * for that. What is not flushed within `timeoutMs` is lost.
 */
export async function stopTracing(timeoutMs = 2_000): Promise<void> {
  const current = sdk;
  sdk = undefined;
  if (!current) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    current.shutdown().catch(() => undefined),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
      timer.unref();
    }),
  ]);
  clearTimeout(timer);
}

/** A query string for a span: parameter names kept (they help debugging), values replaced (they may be secret). */
export function redactQuery(query: string): string {
  return query.replace(/=[^&]*/g, '=REDACTED');
}

/** Writes the active trace context (W3C `traceparent`/`tracestate`, baggage) into a header carrier. */
export function injectTraceContext<C>(
  carrier: C,
  setter: TextMapSetter<C>,
  ctx: Context = context.active(),
): void {
  propagation.inject(ctx, carrier, setter);
}

/** Reads a trace context out of a header carrier, on top of the active context. */
export function extractTraceContext<C>(carrier: C, getter: TextMapGetter<C>): Context {
  return propagation.extract(context.active(), carrier, getter);
}

export function currentTraceId(): string | undefined {
  const span = trace.getActiveSpan();
  const id = span?.spanContext().traceId;
  return id && id !== '00000000000000000000000000000000' ? id : undefined;
}

/**
 * The active span's ids for log lines (`trace_id`, `span_id`), or undefined outside a span (or in an
 * unsampled one with no valid context).
 */
export function currentSpanIds(): { traceId: string; spanId: string } | undefined {
  const ctx = trace.getActiveSpan()?.spanContext();
  if (!ctx || !trace.isSpanContextValid(ctx)) return undefined;
  return { traceId: ctx.traceId, spanId: ctx.spanId };
}

export {
  context,
  propagation,
  trace,
  metrics,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
} from '@opentelemetry/api';
export type {
  Attributes,
  Span,
  Tracer,
  Context,
  Counter,
  Histogram,
  Meter,
  ObservableGauge,
  UpDownCounter,
} from '@opentelemetry/api';
