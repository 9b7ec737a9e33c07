import { createSecretKey, hkdfSync, type KeyObject } from 'node:crypto';
import { MasterKeyring } from './envelope';

/**
 * The secret that signs internal callers of the proxy service (the gateway in remote mode,
 * functions-runtime) and that the proxy checks them with: SWITCHBOARD_INTERNAL_TOKEN when set; otherwise
 * a key derived (HKDF, one-way) from the oldest configured master key, for setups where every service
 * shares one environment. Every party must derive it byte for byte alike, hence one function for all.
 * Undefined when neither is set; each caller decides whether that fails its boot.
 */
export function internalSigningKey(env: {
  SWITCHBOARD_INTERNAL_TOKEN?: string | undefined;
  SWITCHBOARD_MASTER_KEYS?: string | undefined;
}): KeyObject | undefined {
  // A KeyObject: an HMAC given a raw key converts it on every call, several times the cost of the HMAC.
  if (env.SWITCHBOARD_INTERNAL_TOKEN)
    return createSecretKey(Buffer.from(env.SWITCHBOARD_INTERNAL_TOKEN, 'utf8'));
  if (!env.SWITCHBOARD_MASTER_KEYS) return undefined;
  const ring = new MasterKeyring(env.SWITCHBOARD_MASTER_KEYS);
  const oldest = ring.versions()[0]!;
  return createSecretKey(
    Buffer.from(
      hkdfSync('sha256', ring.key(oldest), Buffer.alloc(0), 'switchboard/proxy-internal-token/v1', 32),
    ),
  );
}
