import { createHash, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import {
  PROXY_INTERNAL_HEADERS,
  PROXY_SIGNED_HEADERS,
  proxyCallerSigningInput,
  type Caller,
  type ProxyCaller,
} from '@switchboard/contracts';
import { MasterKeyring } from '@switchboard/crypto';

/**
 * The key the proxy service checks callers with: SWITCHBOARD_INTERNAL_TOKEN, or the key derived (HKDF,
 * one-way) from the oldest master key. Derived exactly as the gateway and the proxy do
 * (apps/gateway/src/proxy/internal-token.ts, apps/proxy/src/internal/internal-token.ts): apps do not
 * import each other, and the three must agree byte for byte.
 */
export function internalSigningKey(env: {
  SWITCHBOARD_INTERNAL_TOKEN?: string | undefined;
  SWITCHBOARD_MASTER_KEYS?: string | undefined;
}): Buffer {
  if (env.SWITCHBOARD_INTERNAL_TOKEN) return Buffer.from(env.SWITCHBOARD_INTERNAL_TOKEN, 'utf8');
  if (!env.SWITCHBOARD_MASTER_KEYS)
    throw new Error('SWITCHBOARD_INTERNAL_TOKEN or SWITCHBOARD_MASTER_KEYS is required');
  const ring = new MasterKeyring(env.SWITCHBOARD_MASTER_KEYS);
  const oldest = ring.versions()[0]!;
  return Buffer.from(
    hkdfSync('sha256', ring.key(oldest), Buffer.alloc(0), 'switchboard/proxy-internal-token/v1', 32),
  );
}

/**
 * The internal headers that tell the proxy service which environment is calling, for this exact request:
 * the caller, the time, a fresh nonce (the proxy takes each once), the connection headers and the body's
 * digest, all under one HMAC, as the gateway signs them in remote mode. A script's calls never carry
 * credentials to an origin other than the provider's own (`credentialsOnAnyOrigin: false`).
 */
export function signCaller(
  key: Buffer,
  method: string,
  url: string,
  caller: Caller,
  headers: Record<string, string>,
  body: string | Buffer | undefined,
  now = Date.now(),
): Record<string, string> {
  const proxyCaller: ProxyCaller = { ...caller, credentialsOnAnyOrigin: false };
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
