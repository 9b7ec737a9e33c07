import { createHmac, hkdfSync } from 'node:crypto';
import { PROXY_INTERNAL_HEADERS, proxyCallerSigningInput, type Caller } from '@switchboard/contracts';
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

/** The three internal headers that tell the proxy service which environment is calling. */
export function signCaller(
  key: Buffer,
  method: string,
  url: string,
  caller: Caller,
  now = Date.now(),
): Record<string, string> {
  const encoded = Buffer.from(JSON.stringify(caller), 'utf8').toString('base64url');
  const timestamp = String(now);
  const signature = createHmac('sha256', key)
    .update(proxyCallerSigningInput(timestamp, method, url, encoded))
    .digest('base64url');
  return {
    [PROXY_INTERNAL_HEADERS.caller]: encoded,
    [PROXY_INTERNAL_HEADERS.timestamp]: timestamp,
    [PROXY_INTERNAL_HEADERS.signature]: signature,
  };
}
