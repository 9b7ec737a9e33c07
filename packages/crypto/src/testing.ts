import { createSecretKey, type KeyObject } from 'node:crypto';
import type { ProxyCaller } from '@switchboard/contracts';
import { proxyBodyDigest, signProxyCall } from './proxy-signature';

/** The gateway-to-proxy signing key, caller and request that the proxy call specs sign and verify. */
export const proxyCallFixture = {
  key: createSecretKey(Buffer.from('k'.repeat(32))),
  caller: {
    accountId: 1,
    environmentId: 2,
    environmentUuid: '00000000-0000-4000-8000-000000000000',
    environmentName: 'dev',
    keyId: 3,
    credentialsOnAnyOrigin: false,
  } satisfies ProxyCaller as ProxyCaller,
  /** The fixed clock the signature is made and checked at (`at: Date.now()` to sign for real time). */
  now: 1_700_000_000_000,
  url: '/proxy/users?page=2',
  connection: { 'provider-config-key': 'github', 'connection-id': 'c1' },
};

/**
 * What arrives at the proxy for a GET of the fixture's URL: the client's connection headers plus the
 * internal ones the gateway signs, with a fresh nonce each time.
 */
export function signedProxyCall(
  options: { key?: KeyObject; at?: number; caller?: ProxyCaller; bodyDigest?: string } = {},
): Record<string, string> {
  const { key, caller, now, url, connection } = proxyCallFixture;
  return {
    ...connection,
    ...signProxyCall(
      options.key ?? key,
      {
        method: 'GET',
        url,
        caller: options.caller ?? caller,
        headers: connection,
        bodyDigest: options.bodyDigest ?? proxyBodyDigest(undefined),
      },
      options.at ?? now,
    ),
  };
}
