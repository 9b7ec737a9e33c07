import { z } from 'zod';
import { callerSchema } from './context';
import { connectionCredentialsSchema } from './internal-auth';

/**
 * The proxy's wire: the headers the official client sends on `/proxy/*` (Nango's names), and the
 * internal headers by which the gateway tells the proxy service who is calling. The proxy trusts the
 * caller only when the gateway's HMAC over those headers verifies (see `proxyCallerSigningInput`).
 */

/** Client headers of a proxy call, lower-cased as Node delivers them. */
export const proxyRequestHeadersSchema = z.object({
  'provider-config-key': z.string().min(1).max(255),
  'connection-id': z.string().min(1).max(255),
  /** Extra attempts after the first one; the official client omits it when 0. */
  retries: z
    .string()
    .regex(/^\d{1,3}$/, 'must be a whole number')
    .transform(Number)
    .optional(),
  /** The client always sends it; an empty string means "use the provider's base URL". */
  'base-url-override': z.string().max(2048).optional(),
  decompress: z.enum(['true', 'false']).optional(),
  'retry-on': z
    .string()
    .regex(/^\d{3}(,\d{3})*$/, 'must be a comma-separated list of HTTP status codes')
    .optional(),
  'forward-headers-on-redirect': z.enum(['true', 'false']).optional(),
  'nango-activity-log-id': z.string().max(255).optional(),
  'nango-is-sync': z.string().optional(),
  'nango-is-dry-run': z.string().optional(),
});
export type ProxyRequestHeaders = z.infer<typeof proxyRequestHeadersSchema>;

/** Client headers forwarded to the provider with this prefix removed (`Nango-Proxy-X-Foo` → `X-Foo`). */
export const PROXY_FORWARD_PREFIX = 'nango-proxy-';

/**
 * Per-hop headers (RFC 9110 §7.6.1): never forwarded in either direction; the HTTP client of each hop
 * sets its own framing. Headers named by `Connection` are per-hop too.
 */
export const HOP_BY_HOP_HEADERS: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** Prefix of every internal header; the gateway strips inbound ones, the proxy strips upstream ones. */
export const INTERNAL_HEADER_PREFIX = 'x-switchboard-';

export const PROXY_INTERNAL_HEADERS = {
  /** base64url(JSON of `Caller`). */
  caller: 'x-switchboard-caller',
  /** Milliseconds since the epoch when the gateway signed the request. */
  timestamp: 'x-switchboard-timestamp',
  /** base64url(HMAC-SHA256(internal token, proxyCallerSigningInput(...))). */
  signature: 'x-switchboard-signature',
  /** 16 random bytes (base64url), signed: the proxy accepts each nonce once, so a captured request cannot be replayed. */
  nonce: 'x-switchboard-nonce',
  /**
   * base64url(SHA-256 of the body) for a body the gateway holds (known length up to
   * PROXY_SIGNED_BODY_MAX_BYTES, or none), else `UNSIGNED-PAYLOAD` for a larger or chunked body it streams.
   */
  bodyDigest: 'x-switchboard-body-digest',
  /**
   * Set by the proxy on an answer that is its own error (not the provider's): the body is our error
   * shape, and the gateway re-emits it with the status from its one code → status table.
   */
  errorCode: 'x-switchboard-error-code',
} as const;

/**
 * What the signed caller header carries: who is calling, and whether its key may send the connection's
 * credentials to any Base-Url-Override origin (it holds `environment:connections:read_credentials`).
 */
export const proxyCallerSchema = callerSchema.extend({
  credentialsOnAnyOrigin: z.boolean().default(false),
  /**
   * Only functions-runtime sets it, for a validate-connection script: the credentials of a connection not
   * stored yet, used for this call instead of the vault's (never cached, never refreshed). Signed with the
   * caller, and the gateway strips inbound internal headers, so no API caller can supply it.
   */
  candidate: connectionCredentialsSchema.optional(),
});
export type ProxyCaller = z.infer<typeof proxyCallerSchema>;

/** How long a signed gateway request stays acceptable to the proxy (clock skew plus queueing). */
export const PROXY_SIGNATURE_MAX_AGE_MS = 60_000;

/** Largest body the gateway hashes for the signature (it buffers it to do so); larger ones stream unsigned. */
export const PROXY_SIGNED_BODY_MAX_BYTES = 1_048_576;
export const PROXY_UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';

/** The client headers that pick the connection and where its credentials go: signed with the caller. */
export const PROXY_SIGNED_HEADERS = [
  'provider-config-key',
  'connection-id',
  'base-url-override',
  'forward-headers-on-redirect',
] as const;

export interface ProxySignedRequest {
  timestamp: string;
  nonce: string;
  method: string;
  url: string;
  /** The caller header's value (base64url JSON). */
  caller: string;
  /** Values of PROXY_SIGNED_HEADERS in order ('' when absent). */
  headers: readonly string[];
  bodyDigest: string;
}

/**
 * The exact bytes the gateway signs: a version, the time, a nonce, the method, the raw URL, the caller, the
 * connection headers and the body digest. Header values cannot hold a line break, so the fields cannot run
 * into each other.
 */
export function proxyCallerSigningInput(request: ProxySignedRequest): string {
  return [
    'v2',
    request.timestamp,
    request.nonce,
    request.method.toUpperCase(),
    request.url,
    request.caller,
    ...request.headers,
    request.bodyDigest,
  ].join('\n');
}

/** integration_config key that turns per-connection rate-limit governance off for one integration. */
export const PROXY_RATE_LIMIT_GOVERNANCE_KEY = 'proxy_rate_limit_governance';
