import type { IncomingHttpHeaders, OutgoingHttpHeader, OutgoingHttpHeaders } from 'node:http';
import { HOP_BY_HOP_HEADERS, INTERNAL_HEADER_PREFIX, PROXY_FORWARD_PREFIX } from '@switchboard/contracts';

/**
 * Caller headers that describe the body or what the caller can read: they pass through unprefixed so the
 * provider sees the same body and negotiation as on a direct call. Everything else must be opted into
 * with the `Nango-Proxy-` prefix; in particular the caller's `Authorization` (our secret key) never goes on.
 */
const PASSTHROUGH = ['content-type', 'content-encoding', 'accept', 'accept-encoding'] as const;

/** Names a caller may not set on the provider request, even prefixed: framing, routing and our own. */
function refused(name: string): boolean {
  return name === '' || name === 'host' || name === 'content-length' || name === 'expect' || HOP_BY_HOP_HEADERS.has(name) || name.startsWith(INTERNAL_HEADER_PREFIX);
}

export function forwardedRequestHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of PASSTHROUGH) {
    const value = headers[name];
    if (typeof value === 'string') out[name] = value;
  }
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || !name.startsWith(PROXY_FORWARD_PREFIX)) continue;
    const target = name.slice(PROXY_FORWARD_PREFIX.length);
    if (refused(target)) continue;
    out[target] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/** Headers an app already set for the answer (rate-limit, CORS), by lower-case name. */
export type ReplyHeaders = Record<string, OutgoingHttpHeader | undefined>;

/** Headers named in `Connection` are per-hop too (RFC 9110 §7.6.1). */
function connectionTokens(value: string | string[] | undefined): Set<string> | undefined {
  if (value === undefined) return undefined;
  const joined = Array.isArray(value) ? value.join(',') : value;
  return new Set(joined.split(',').map((t) => t.trim().toLowerCase()).filter(Boolean));
}

/**
 * A provider's response headers minus per-hop ones and any that imitate our internal headers, written
 * over `into` (headers of our own for the same answer, which lose on a clash).
 */
export function forwardedResponseHeaders(headers: Record<string, string | string[] | undefined>, into: ReplyHeaders = {}): OutgoingHttpHeaders {
  const listed = connectionTokens(headers.connection);
  // Loosely typed on purpose: what frameworks hand out (Fastify's `reply.getHeaders()`) fits it.
  const out = into as OutgoingHttpHeaders;
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || HOP_BY_HOP_HEADERS.has(name) || listed?.has(name) || name.startsWith(INTERNAL_HEADER_PREFIX)) continue;
    out[name] = value;
  }
  return out;
}
