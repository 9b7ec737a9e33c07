import { createHash, createHmac, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto';
import {
  PROXY_INTERNAL_HEADERS,
  PROXY_SIGNATURE_MAX_AGE_MS,
  PROXY_SIGNED_HEADERS,
  PROXY_UNSIGNED_PAYLOAD,
  proxyCallerSchema,
  proxyCallerSigningInput,
  type ProxyCaller,
} from '@switchboard/contracts';

/** Request headers as Node delivers them (lower-cased names); a repeated header counts as absent. */
export type ProxyCallHeaders = Readonly<Record<string, string | readonly string[] | undefined>>;

/** base64url SHA-256 of a body; `undefined` = no body (the digest of zero bytes). */
export function proxyBodyDigest(body: string | Buffer | undefined): string {
  return createHash('sha256')
    .update(body ?? Buffer.alloc(0))
    .digest('base64url');
}

const single = (headers: ProxyCallHeaders, name: string): string | undefined => {
  const value = headers[name];
  return typeof value === 'string' ? value : undefined;
};

function signature(
  key: KeyObject,
  parts: {
    timestamp: string;
    nonce: string;
    method: string;
    url: string;
    caller: string;
    bodyDigest: string;
  },
  headers: ProxyCallHeaders,
): Buffer {
  return createHmac('sha256', key)
    .update(
      proxyCallerSigningInput({
        ...parts,
        headers: PROXY_SIGNED_HEADERS.map((name) => single(headers, name) ?? ''),
      }),
    )
    .digest();
}

/**
 * The internal headers that tell the proxy service which environment is calling, for this exact request:
 * the caller, the time, a fresh nonce (the proxy takes each once), the connection headers and the body's
 * digest (`undefined` = a streamed body, signed as PROXY_UNSIGNED_PAYLOAD), all under one HMAC.
 * The gateway (remote mode) and functions-runtime sign with it; the proxy checks with `verifyProxyCall`.
 */
export function signProxyCall(
  key: KeyObject,
  request: {
    method: string;
    url: string;
    caller: ProxyCaller;
    headers: ProxyCallHeaders;
    bodyDigest: string | undefined;
  },
  now = Date.now(),
): Record<string, string> {
  const caller = Buffer.from(JSON.stringify(request.caller), 'utf8').toString('base64url');
  const timestamp = String(now);
  const nonce = randomBytes(16).toString('base64url');
  const bodyDigest = request.bodyDigest ?? PROXY_UNSIGNED_PAYLOAD;
  const signed = { timestamp, nonce, method: request.method, url: request.url, caller, bodyDigest };
  return {
    [PROXY_INTERNAL_HEADERS.caller]: caller,
    [PROXY_INTERNAL_HEADERS.timestamp]: timestamp,
    [PROXY_INTERNAL_HEADERS.nonce]: nonce,
    [PROXY_INTERNAL_HEADERS.bodyDigest]: bodyDigest,
    [PROXY_INTERNAL_HEADERS.signature]: signature(key, signed, request.headers).toString('base64url'),
  };
}

/** A call whose signature verifies: who is calling, its nonce (not spent yet) and its body's digest. */
export interface VerifiedProxyCall {
  caller: ProxyCaller;
  nonce: string;
  /** base64url SHA-256 of the body, or PROXY_UNSIGNED_PAYLOAD for a large streamed one. */
  bodyDigest: string;
}

/**
 * Checks the signature over (time, nonce, method, URL, caller, connection headers, body digest) and its
 * age; `undefined` when anything is missing, malformed, stale or signed otherwise. Spending the nonce
 * is the verifier's part (only a valid signature should spend one, so a forger cannot burn them).
 */
export function verifyProxyCall(
  key: KeyObject,
  method: string,
  url: string,
  headers: ProxyCallHeaders,
  now = Date.now(),
): VerifiedProxyCall | undefined {
  const caller = single(headers, PROXY_INTERNAL_HEADERS.caller);
  const timestamp = single(headers, PROXY_INTERNAL_HEADERS.timestamp);
  const given = single(headers, PROXY_INTERNAL_HEADERS.signature);
  const nonce = single(headers, PROXY_INTERNAL_HEADERS.nonce);
  const bodyDigest = single(headers, PROXY_INTERNAL_HEADERS.bodyDigest);
  if (!caller || !timestamp || !given || !nonce || !bodyDigest) return undefined;
  if (!/^\d{1,16}$/.test(timestamp) || !/^[A-Za-z0-9_-]{16,64}$/.test(nonce)) return undefined;
  if (Math.abs(now - Number(timestamp)) > PROXY_SIGNATURE_MAX_AGE_MS) return undefined;
  const expected = signature(key, { timestamp, nonce, method, url, caller, bodyDigest }, headers);
  const presented = Buffer.from(given, 'base64url');
  if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) return undefined;
  try {
    const parsed = proxyCallerSchema.safeParse(JSON.parse(Buffer.from(caller, 'base64url').toString('utf8')));
    return parsed.success ? { caller: parsed.data, nonce, bodyDigest } : undefined;
  } catch {
    return undefined;
  }
}
