import { createHmac, hkdfSync } from 'node:crypto';
import { PROXY_INTERNAL_HEADERS, proxyCallerSigningInput, type ProxyCaller } from '@switchboard/contracts';
import { MasterKeyring } from '@switchboard/crypto';

/**
 * The secret the proxy service checks callers with: SWITCHBOARD_INTERNAL_TOKEN, or a key derived
 * (HKDF, one-way) from the oldest master key when every service shares one environment. The proxy
 * derives it the same way (apps/proxy/src/internal/internal-token.ts). Undefined when neither is set.
 */
export function internalSigningKey(env: {
  SWITCHBOARD_INTERNAL_TOKEN?: string | undefined;
  SWITCHBOARD_MASTER_KEYS?: string | undefined;
}): Buffer | undefined {
  if (env.SWITCHBOARD_INTERNAL_TOKEN) return Buffer.from(env.SWITCHBOARD_INTERNAL_TOKEN, 'utf8');
  if (!env.SWITCHBOARD_MASTER_KEYS) return undefined;
  const ring = new MasterKeyring(env.SWITCHBOARD_MASTER_KEYS);
  const oldest = ring.versions()[0]!;
  return Buffer.from(
    hkdfSync('sha256', ring.key(oldest), Buffer.alloc(0), 'switchboard/proxy-internal-token/v1', 32),
  );
}

/** The three internal headers that tell the proxy which environment is calling. */
export function signCaller(
  key: Buffer,
  method: string,
  url: string,
  caller: ProxyCaller,
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
