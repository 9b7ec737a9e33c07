import { createHmac } from 'node:crypto';
import { PROXY_INTERNAL_HEADERS, proxyCallerSigningInput, type Caller } from '@switchboard/contracts';
import { verifyGatewayCaller } from './internal-token';

/** The headers a gateway in remote mode sends, signed the way it signs them. */
function signed(key: Buffer, method: string, url: string, caller: Caller, now: number) {
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

describe('verifyGatewayCaller', () => {
  const key = Buffer.from('k'.repeat(32));
  const caller: Caller = {
    accountId: 1,
    environmentId: 2,
    environmentUuid: '00000000-0000-4000-8000-000000000000',
    environmentName: 'dev',
    keyId: 3,
  };
  const now = 1_700_000_000_000;
  const url = '/proxy/users?page=2';

  it('returns the caller the gateway signed for this method and URL', () => {
    expect(verifyGatewayCaller(key, 'GET', url, signed(key, 'GET', url, caller, now), now)).toEqual({
      ...caller,
      credentialsOnAnyOrigin: false,
    });
  });

  it('carries the permission to aim credentials at any origin only as signed', () => {
    const granted = signed(key, 'GET', url, { ...caller, credentialsOnAnyOrigin: true } as Caller, now);
    expect(verifyGatewayCaller(key, 'GET', url, granted, now)?.credentialsOnAnyOrigin).toBe(true);
    const forged = {
      ...signed(key, 'GET', url, caller, now),
      [PROXY_INTERNAL_HEADERS.caller]: Buffer.from(
        JSON.stringify({ ...caller, credentialsOnAnyOrigin: true }),
      ).toString('base64url'),
    };
    expect(verifyGatewayCaller(key, 'GET', url, forged, now)).toBeUndefined();
  });

  it.each([
    ['another key', () => signed(Buffer.from('x'.repeat(32)), 'GET', url, caller, now), 'GET', url, now],
    ['another method', () => signed(key, 'GET', url, caller, now), 'DELETE', url, now],
    ['another URL', () => signed(key, 'GET', url, caller, now), 'GET', '/proxy/admin', now],
    ['a stale signature', () => signed(key, 'GET', url, caller, now - 120_000), 'GET', url, now],
    [
      'no signature',
      () => ({ [PROXY_INTERNAL_HEADERS.caller]: 'e30', [PROXY_INTERNAL_HEADERS.timestamp]: String(now) }),
      'GET',
      url,
      now,
    ],
  ])('refuses %s', (_label, headers, method, requestUrl, at) => {
    expect(verifyGatewayCaller(key, method, requestUrl, headers(), at)).toBeUndefined();
  });
});
