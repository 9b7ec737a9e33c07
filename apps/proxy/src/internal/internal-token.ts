import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import {
  PROXY_INTERNAL_HEADERS,
  PROXY_SIGNATURE_MAX_AGE_MS,
  proxyCallerSchema,
  proxyCallerSigningInput,
  type ProxyCaller,
} from '@switchboard/contracts';
import { MasterKeyring } from '@switchboard/crypto';
import type { IncomingHttpHeaders } from 'node:http';

/**
 * The secret the gateway signs callers with. SWITCHBOARD_INTERNAL_TOKEN when set; otherwise a key
 * derived (HKDF, one-way) from the oldest configured master key, for single-host setups where every
 * service shares one environment. The gateway derives it the same way (apps/gateway/src/proxy).
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

const header = (headers: IncomingHttpHeaders, name: string): string | undefined => {
  const value = headers[name];
  return typeof value === 'string' ? value : undefined;
};

/**
 * Returns who is calling when the gateway's signature over (time, method, URL, caller) verifies and is
 * fresh; undefined otherwise. Nothing but the gateway can produce it, so a request sent straight to the
 * proxy's port cannot pick an environment.
 */
export function verifyGatewayCaller(
  key: Buffer,
  method: string,
  url: string,
  headers: IncomingHttpHeaders,
  now = Date.now(),
): ProxyCaller | undefined {
  const caller = header(headers, PROXY_INTERNAL_HEADERS.caller);
  const timestamp = header(headers, PROXY_INTERNAL_HEADERS.timestamp);
  const signature = header(headers, PROXY_INTERNAL_HEADERS.signature);
  if (!caller || !timestamp || !signature || !/^\d{1,16}$/.test(timestamp)) return undefined;
  if (Math.abs(now - Number(timestamp)) > PROXY_SIGNATURE_MAX_AGE_MS) return undefined;
  const expected = createHmac('sha256', key)
    .update(proxyCallerSigningInput(timestamp, method, url, caller))
    .digest();
  const given = Buffer.from(signature, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  try {
    const parsed = proxyCallerSchema.safeParse(JSON.parse(Buffer.from(caller, 'base64url').toString('utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
