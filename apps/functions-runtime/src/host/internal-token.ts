import { createHash, createHmac, randomBytes, type KeyObject } from 'node:crypto';
import {
  PROXY_INTERNAL_HEADERS,
  PROXY_SIGNED_HEADERS,
  proxyCallerSigningInput,
  type Caller,
  type ConnectionCredentials,
  type ProxyCaller,
} from '@switchboard/contracts';

/**
 * The internal headers that tell the proxy service which environment is calling, for this exact request:
 * the caller, the time, a fresh nonce (the proxy takes each once), the connection headers and the body's
 * digest, all under one HMAC, as the gateway signs them in remote mode (plus, for a validate-connection
 * run, the candidate credentials inside the signed caller). A script's calls never carry
 * credentials to an origin other than the provider's own (`credentialsOnAnyOrigin: false`).
 */
export function signCaller(
  key: KeyObject,
  method: string,
  url: string,
  caller: Caller,
  headers: Record<string, string>,
  body: string | Buffer | undefined,
  now = Date.now(),
  candidate?: ConnectionCredentials,
): Record<string, string> {
  const proxyCaller: ProxyCaller = {
    ...caller,
    credentialsOnAnyOrigin: false,
    ...(candidate ? { candidate } : {}),
  };
  const encoded = Buffer.from(JSON.stringify(proxyCaller), 'utf8').toString('base64url');
  const timestamp = String(now);
  const nonce = randomBytes(16).toString('base64url');
  const bodyDigest = createHash('sha256')
    .update(body ?? Buffer.alloc(0))
    .digest('base64url');
  const signature = createHmac('sha256', key)
    .update(
      proxyCallerSigningInput({
        timestamp,
        nonce,
        method,
        url,
        caller: encoded,
        headers: PROXY_SIGNED_HEADERS.map((name) => headers[name] ?? ''),
        bodyDigest,
      }),
    )
    .digest('base64url');
  return {
    [PROXY_INTERNAL_HEADERS.caller]: encoded,
    [PROXY_INTERNAL_HEADERS.timestamp]: timestamp,
    [PROXY_INTERNAL_HEADERS.nonce]: nonce,
    [PROXY_INTERNAL_HEADERS.bodyDigest]: bodyDigest,
    [PROXY_INTERNAL_HEADERS.signature]: signature,
  };
}
