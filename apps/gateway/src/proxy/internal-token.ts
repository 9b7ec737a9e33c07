import { createHash, createHmac, randomBytes, type KeyObject } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import {
  PROXY_INTERNAL_HEADERS,
  PROXY_SIGNED_HEADERS,
  PROXY_UNSIGNED_PAYLOAD,
  proxyCallerSigningInput,
  type ProxyCaller,
} from '@switchboard/contracts';

/** SHA-256 (base64url) of a body the gateway holds; `undefined` = no body. */
export function bodyDigest(body: Buffer | undefined): string {
  return createHash('sha256')
    .update(body ?? Buffer.alloc(0))
    .digest('base64url');
}

const headerValue = (headers: IncomingHttpHeaders, name: string): string => {
  const value = headers[name];
  return typeof value === 'string' ? value : '';
};

/**
 * The internal headers that tell the proxy which environment is calling, for this exact request: the
 * caller, the time, a fresh nonce (the proxy takes each once), the connection headers and the body's digest
 * (`undefined` = a streamed body, signed as PROXY_UNSIGNED_PAYLOAD), all under one HMAC.
 */
export function signCaller(
  key: KeyObject,
  method: string,
  url: string,
  caller: ProxyCaller,
  headers: IncomingHttpHeaders,
  digest: string | undefined,
  now = Date.now(),
): Record<string, string> {
  const encoded = Buffer.from(JSON.stringify(caller), 'utf8').toString('base64url');
  const timestamp = String(now);
  const nonce = randomBytes(16).toString('base64url');
  const signedDigest = digest ?? PROXY_UNSIGNED_PAYLOAD;
  const signature = createHmac('sha256', key)
    .update(
      proxyCallerSigningInput({
        timestamp,
        nonce,
        method,
        url,
        caller: encoded,
        headers: PROXY_SIGNED_HEADERS.map((name) => headerValue(headers, name)),
        bodyDigest: signedDigest,
      }),
    )
    .digest('base64url');
  return {
    [PROXY_INTERNAL_HEADERS.caller]: encoded,
    [PROXY_INTERNAL_HEADERS.timestamp]: timestamp,
    [PROXY_INTERNAL_HEADERS.nonce]: nonce,
    [PROXY_INTERNAL_HEADERS.bodyDigest]: signedDigest,
    [PROXY_INTERNAL_HEADERS.signature]: signature,
  };
}
