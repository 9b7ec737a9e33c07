import { context, propagation, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';

const tracer = trace.getTracer('@switchboard/observability');

/** Host and port per origin (a few per integration), parsed once. */
const servers = new Map<string, { address: string; port: number }>();

function serverOf(origin: string): { address: string; port: number } {
  let server = servers.get(origin);
  if (!server) {
    const url = new URL(origin);
    server = { address: url.hostname, port: Number(url.port) || (url.protocol === 'https:' ? 443 : 80) };
    if (servers.size >= 1_000) servers.clear();
    servers.set(origin, server);
  }
  return server;
}

/**
 * The client span of one outgoing HTTP request made with undici where the undici instrumentation is off
 * (`startTracing(name, { undici: false })`): a child of the active span, with the trace context written
 * into `headers`. Attributes as the instrumentation names them, the URL without its query (it may carry a
 * credential). Undefined when nothing records (tracing off, no active span, not sampled): nothing to pay.
 */
export function startClientSpan(
  method: string,
  origin: string,
  path: string,
  headers: Record<string, string | string[]>,
): Span | undefined {
  const parent = context.active();
  if (!trace.getSpan(parent)?.isRecording()) return undefined;
  const q = path.indexOf('?');
  const server = serverOf(origin);
  const span = tracer.startSpan(
    method,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        'http.request.method': method,
        'url.full': `${origin}${q === -1 ? path : path.slice(0, q)}`,
        'server.address': server.address,
        'server.port': server.port,
      },
    },
    parent,
  );
  propagation.inject(trace.setSpan(parent, span), headers);
  return span;
}

/**
 * Records the answer's status, or the failure (by its code only: messages may quote URLs), and ends the
 * span once the answer's body is read or dropped (at once if it already is).
 */
export function endClientSpan(
  span: Span | undefined,
  response:
    | {
        statusCode: number;
        body: { readonly closed: boolean; once(event: 'close', listener: () => void): unknown };
      }
    | undefined,
  error?: unknown,
): void {
  if (!span) return;
  if (!response) {
    span.setStatus({
      code: SpanStatusCode.ERROR,
      message: String((error as { code?: unknown } | undefined)?.code ?? 'request failed'),
    });
    span.end();
    return;
  }
  span.setAttribute('http.response.status_code', response.statusCode);
  if (response.statusCode >= 400) span.setStatus({ code: SpanStatusCode.ERROR });
  // A short body may be over already (read with its headers).
  if (response.body.closed) span.end();
  else response.body.once('close', () => span.end());
}
