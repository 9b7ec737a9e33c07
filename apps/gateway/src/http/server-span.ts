import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  redactQuery,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@switchboard/observability';

const tracer = trace.getTracer('@switchboard/gateway');

/**
 * The request's server span, ended when the answer is (or the caller left). Attributes as the HTTP
 * instrumentation names them for the gateway's other routes, so one query finds both; never the query
 * string's values, which may hold a provider credential.
 */
export function startServerSpan(
  req: IncomingMessage,
  res: ServerResponse,
  parent: Context,
  route: string,
): Span {
  const url = req.url!;
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  const method = req.method ?? 'GET';
  const attributes: Attributes = {
    'http.method': method,
    'http.route': route,
    'http.target': path,
    'http.url': `http://${req.headers.host ?? 'localhost'}${path}`,
    'http.flavor': req.httpVersion,
  };
  if (q !== -1) attributes['url.query'] = redactQuery(url.slice(q + 1));
  const span = tracer.startSpan(`${method} ${route}`, { kind: SpanKind.SERVER, attributes }, parent);
  if (!span.isRecording()) return span;
  res.once('close', () => {
    if (res.headersSent) {
      span.setAttribute('http.status_code', res.statusCode);
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    } else {
      span.setStatus({ code: SpanStatusCode.ERROR, message: 'the caller left before an answer' });
    }
    span.end();
  });
  return span;
}
