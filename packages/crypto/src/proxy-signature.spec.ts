import { createSecretKey } from 'node:crypto';
import { PROXY_INTERNAL_HEADERS, PROXY_UNSIGNED_PAYLOAD, type ProxyCaller } from '@switchboard/contracts';
import { proxyBodyDigest, signProxyCall, verifyProxyCall, type ProxyCallHeaders } from './proxy-signature';
import { proxyCallFixture, signedProxyCall } from './testing';

const { key, caller, now, url, connection } = proxyCallFixture;
const candidate = {
  connectionId: 'c1',
  providerConfigKey: 'github',
  provider: 'github',
  credentials: { type: 'API_KEY' as const, apiKey: 'k1' },
  connectionConfig: {},
  metadata: null,
};

/** What arrives at the proxy: the client's headers plus the signed internal ones. */
const signed = (
  options: { signingKey?: string; at?: number; who?: ProxyCaller; bodyDigest?: string } = {},
): ProxyCallHeaders =>
  signedProxyCall({
    key: options.signingKey ? createSecretKey(Buffer.from(options.signingKey)) : undefined,
    at: options.at,
    caller: options.who,
    bodyDigest: options.bodyDigest,
  });

describe('signProxyCall and verifyProxyCall', () => {
  it('returns the caller signed for this method, URL and connection', () => {
    const headers = signed();
    expect(verifyProxyCall(key, 'GET', url, headers, now)).toEqual({
      caller,
      nonce: headers[PROXY_INTERNAL_HEADERS.nonce],
      bodyDigest: proxyBodyDigest(''),
    });
  });

  it('signs a fresh nonce each time', () => {
    expect(signed()[PROXY_INTERNAL_HEADERS.nonce]).not.toEqual(signed()[PROXY_INTERNAL_HEADERS.nonce]);
  });

  it('signs a streamed body as unsigned payload', () => {
    const headers = signProxyCall(
      key,
      { method: 'POST', url, caller, headers: connection, bodyDigest: undefined },
      now,
    );
    expect(verifyProxyCall(key, 'POST', url, { ...connection, ...headers }, now)?.bodyDigest).toBe(
      PROXY_UNSIGNED_PAYLOAD,
    );
  });

  it('carries the candidate credentials and the any-origin permission only as signed', () => {
    const granted = signed({
      who: { ...caller, credentialsOnAnyOrigin: true, candidate },
    });
    expect(verifyProxyCall(key, 'GET', url, granted, now)?.caller).toMatchObject({
      credentialsOnAnyOrigin: true,
      candidate,
    });
    const forged = {
      ...signed(),
      [PROXY_INTERNAL_HEADERS.caller]: Buffer.from(
        JSON.stringify({ ...caller, credentialsOnAnyOrigin: true }),
      ).toString('base64url'),
    };
    expect(verifyProxyCall(key, 'GET', url, forged, now)).toBeUndefined();
  });

  it.each<[string, () => ProxyCallHeaders, string, string, number?]>([
    ['another key', () => signed({ signingKey: 'x'.repeat(32) }), 'GET', url],
    ['another method', () => signed(), 'DELETE', url],
    ['another URL', () => signed(), 'GET', '/proxy/admin'],
    ['a stale signature', () => signed({ at: now - 120_000 }), 'GET', url],
    ['a signature from the future', () => signed({ at: now + 120_000 }), 'GET', url],
    ['another connection', () => ({ ...signed(), 'connection-id': 'victim' }), 'GET', url],
    ['another integration', () => ({ ...signed(), 'provider-config-key': 'slack' }), 'GET', url],
    [
      'an added Base-Url-Override',
      () => ({ ...signed(), 'base-url-override': 'http://x.invalid' }),
      'GET',
      url,
    ],
    [
      'another body digest',
      () => ({ ...signed(), [PROXY_INTERNAL_HEADERS.bodyDigest]: proxyBodyDigest('x') }),
      'GET',
      url,
    ],
    ['no nonce', () => ({ ...signed(), [PROXY_INTERNAL_HEADERS.nonce]: undefined }), 'GET', url],
    [
      'a repeated signature header',
      () => {
        const headers = signed();
        const value = headers[PROXY_INTERNAL_HEADERS.signature] as string;
        return { ...headers, [PROXY_INTERNAL_HEADERS.signature]: [value, value] };
      },
      'GET',
      url,
    ],
    [
      'no signature',
      () => ({ [PROXY_INTERNAL_HEADERS.caller]: 'e30', [PROXY_INTERNAL_HEADERS.timestamp]: String(now) }),
      'GET',
      url,
    ],
  ])('refuses %s', (_label, headers, method, requestUrl) => {
    expect(verifyProxyCall(key, method, requestUrl, headers(), now)).toBeUndefined();
  });
});
