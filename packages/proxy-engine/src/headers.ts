import type { IncomingHttpHeaders, OutgoingHttpHeader, OutgoingHttpHeaders } from 'node:http';
import {
  fieldErrorsFromZod,
  HOP_BY_HOP_HEADERS,
  INTERNAL_HEADER_PREFIX,
  PROXY_FORWARD_PREFIX,
  proxyRequestHeadersSchema,
  type ProxyRequestHeaders,
} from '@switchboard/contracts';
import { ProxyError } from './proxy.errors';

/**
 * Caller headers that describe the body or what the caller can read: they pass through unprefixed so the
 * provider sees the same body and negotiation as on a direct call. Everything else must be opted into
 * with the `Nango-Proxy-` prefix; in particular the caller's `Authorization` (our secret key) never goes on.
 */
const PASSTHROUGH = ['content-type', 'content-encoding', 'accept', 'accept-encoding'] as const;

/** Names a caller may not set on the provider request, even prefixed: framing, routing and our own. */
function refused(name: string): boolean {
  return (
    name === '' ||
    name === 'host' ||
    name === 'content-length' ||
    name === 'expect' ||
    HOP_BY_HOP_HEADERS.has(name) ||
    name.startsWith(INTERNAL_HEADER_PREFIX)
  );
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
  // What nearly every provider sends; both are per-hop names already, so they add nothing to strip.
  if (value === undefined || value === 'keep-alive' || value === 'close') return undefined;
  const joined = Array.isArray(value) ? value.join(',') : value;
  return new Set(
    joined
      .split(',')
      .map((t) => t.trim().toLowerCase())
      .filter(Boolean),
  );
}

/**
 * A provider's response headers minus per-hop ones and any that imitate our internal headers, written
 * over `into` (headers of our own for the same answer, which lose on a clash).
 */
export function forwardedResponseHeaders(
  headers: Record<string, string | string[] | undefined>,
  into: ReplyHeaders = {},
): OutgoingHttpHeaders {
  const listed = connectionTokens(headers.connection);
  // Loosely typed on purpose: what frameworks hand out (Fastify's `reply.getHeaders()`) fits it.
  const out = into as OutgoingHttpHeaders;
  for (const name in headers) {
    const value = headers[name];
    if (
      value === undefined ||
      HOP_BY_HOP_HEADERS.has(name) ||
      listed?.has(name) ||
      name.startsWith(INTERNAL_HEADER_PREFIX)
    )
      continue;
    out[name] = value;
  }
  return out;
}

/** The headers the schema reads (zod builds `shape` on access). */
const PROXY_HEADER_NAMES = Object.keys(proxyRequestHeadersSchema.shape);

/** Headers whose checks `plainHeadersValid` repeats: plain strings within bounds, no transform. */
const PLAIN_HEADERS = new Set(['provider-config-key', 'connection-id', 'base-url-override']);

function plainHeadersValid(picked: Record<string, unknown>): boolean {
  const key = picked['provider-config-key'];
  const id = picked['connection-id'];
  const override = picked['base-url-override'];
  return (
    typeof key === 'string' &&
    key.length >= 1 &&
    key.length <= 255 &&
    typeof id === 'string' &&
    id.length >= 1 &&
    id.length <= 255 &&
    (override === undefined || (typeof override === 'string' && override.length <= 2048))
  );
}

/** The Nango proxy headers of a call, validated; an `invalid_headers` error names what is wrong. */
export function parseProxyHeaders(headers: IncomingHttpHeaders): ProxyRequestHeaders {
  const picked: Record<string, unknown> = {};
  let others = 0;
  for (const name of PROXY_HEADER_NAMES) {
    const value = headers[name];
    if (value === undefined) continue;
    picked[name] = Array.isArray(value) ? value[0] : value;
    if (!PLAIN_HEADERS.has(name)) others++;
  }
  // The usual call carries only the two names (and the client's Base-Url-Override): checked here as the
  // schema would, without its cost per call. Anything else, or anything out of bounds, goes to the schema.
  if (others === 0 && plainHeadersValid(picked)) return picked as ProxyRequestHeaders;
  const parsed = proxyRequestHeadersSchema.safeParse(picked);
  if (!parsed.success) {
    const missing = parsed.error.issues.some((i) => i.code === 'invalid_type');
    throw new ProxyError(
      'invalid_headers',
      missing ? 'Provider-Config-Key and Connection-Id headers are required' : 'Invalid proxy headers',
      {},
      fieldErrorsFromZod(parsed.error, ['headers']),
    );
  }
  return parsed.data;
}
