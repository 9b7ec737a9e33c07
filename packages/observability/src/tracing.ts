import {
  context,
  propagation,
  trace,
  type Context,
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

let sdk: NodeSDK | undefined;

/**
 * Starts OpenTelemetry for this process. Call it before anything imports `http`, `pg` or Nest, i.e. as
 * the first import of `main.ts`, or those modules are not patched. The exporter is chosen by the standard
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
  // NodeSDK also sets up metric and log exporters by default; they are not used yet, and they make
  // shutdown wait ~8 s for a collector that may not exist.
  process.env.OTEL_METRICS_EXPORTER ??= 'none';
  process.env.OTEL_LOGS_EXPORTER ??= 'none';
  sdk = new NodeSDK({
    resource: resourceFromAttributes({
      [ATTR_SERVICE_NAME]: process.env.OTEL_SERVICE_NAME ?? serviceName,
      [ATTR_SERVICE_VERSION]: options.version ?? '0.1.0',
    }),
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

/** Flushes and stops tracing; safe to call when tracing never started. */
export async function stopTracing(): Promise<void> {
  const current = sdk;
  sdk = undefined;
  await current?.shutdown().catch(() => undefined);
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

export { context, propagation, trace, ROOT_CONTEXT, SpanKind, SpanStatusCode } from '@opentelemetry/api';
export type { Attributes, Span, Tracer, Context } from '@opentelemetry/api';
