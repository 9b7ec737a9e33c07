import type { IncomingHttpHeaders } from 'node:http';

type Headers = IncomingHttpHeaders | Record<string, string | string[] | undefined>;

/** Methods a repeat cannot harm (RFC 9110 §9.2.2), plus the WebDAV reads the client can send. */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE', 'PROPFIND', 'REPORT']);
export const isIdempotent = (method: string): boolean => IDEMPOTENT.has(method);

export interface RetrySettings {
  /** Extra status codes from the caller's Retry-On: retried for any method. */
  retryOn: ReadonlySet<number>;
  /** The provider's `retry.error_code` list (`429`, `5xx`, ...). */
  providerCodes: readonly string[];
}

/**
 * Whether a provider status is worth another attempt. 429 means the provider did not act on the
 * request, so it is retried for every method; a 5xx may have acted, so POST and PATCH are retried on
 * it only when the caller listed that code in Retry-On.
 */
export function retryableStatus(status: number, method: string, settings: RetrySettings): boolean {
  if (settings.retryOn.has(status)) return true;
  if (status === 429) return true;
  const listed = settings.providerCodes.some(
    (code) => code === String(status) || (code.endsWith('xx') && code[0] === String(status)[0]),
  );
  if (status >= 500 || listed) return isIdempotent(method);
  return false;
}

const BEFORE_SENDING = new Set([
  'ECONNREFUSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);
const AFTER_SENDING = new Set([
  'ECONNRESET',
  'EPIPE',
  'ECONNABORTED',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_ABORTED',
  'ETIMEDOUT',
]);

/** A connection that failed before the request left is safe to retry for any method; a reset or timeout only for idempotent ones. */
export function retryableError(error: unknown, method: string): boolean {
  const code = errorCode(error);
  if (code === undefined) return false;
  if (BEFORE_SENDING.has(code)) return true;
  return AFTER_SENDING.has(code) && isIdempotent(method);
}

export function errorCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Exponential back-off with "equal jitter": between half and all of min(cap, base × 2^attempt). */
export function backoffMs(
  attempt: number,
  baseMs: number,
  capMs: number,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** attempt);
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

function first(headers: Headers, name: string): string | undefined {
  const value = headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

/** Seconds to wait, or an HTTP date. */
function parseDelay(value: string, now: number): number | undefined {
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.ceil(Number(trimmed) * 1000);
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** An absolute reset time: epoch seconds, epoch milliseconds or an HTTP date. */
function parseResetAt(value: string, now: number): number | undefined {
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) {
    const n = Number(trimmed);
    const at = n > 1e12 ? n : n * 1000;
    // Small numbers are not epochs: some providers put seconds-until-reset in their "reset" header.
    return n < 1e9 ? Math.ceil(n * 1000) : Math.max(0, Math.ceil(at - now));
  }
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

export interface ProviderRetryHeaders {
  at?: readonly string[] | undefined;
  after?: readonly string[] | undefined;
  remaining?: string | undefined;
}

/**
 * How long the provider asked us to wait, in ms: `Retry-After` (seconds or date), or the provider's own
 * headers from the catalog (`retry.after`: a delay, `retry.at`: a reset time). Undefined when it said nothing.
 */
export function providerWaitMs(
  headers: Headers,
  provider: ProviderRetryHeaders | undefined,
  now = Date.now(),
): number | undefined {
  for (const name of provider?.after ?? []) {
    const value = first(headers, name);
    const ms = value === undefined ? undefined : parseDelay(value, now);
    if (ms !== undefined) return ms;
  }
  for (const name of provider?.at ?? []) {
    const value = first(headers, name);
    const ms = value === undefined ? undefined : parseResetAt(value, now);
    if (ms !== undefined) return ms;
  }
  const retryAfter = first(headers, 'retry-after');
  return retryAfter === undefined ? undefined : parseDelay(retryAfter, now);
}

/** True when the provider's remaining-quota header (catalog `retry.remaining`) says nothing is left. */
export function quotaExhausted(headers: Headers, provider: ProviderRetryHeaders | undefined): boolean {
  if (!provider?.remaining) return false;
  const value = first(headers, provider.remaining);
  return value !== undefined && /^\s*0+(\.0+)?\s*$/.test(value);
}
