import { createHash, createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import { Readable } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import {
  PROXY_INTERNAL_HEADERS,
  PROXY_SIGNED_HEADERS,
  PROXY_UNSIGNED_PAYLOAD,
  proxyCallerSigningInput,
  type Caller,
} from '@switchboard/contracts';
import { checkedBody, GatewaySignatures } from './internal-token';

const key = createSecretKey(Buffer.from('k'.repeat(32)));
const caller: Caller = {
  accountId: 1,
  environmentId: 2,
  environmentUuid: '00000000-0000-4000-8000-000000000000',
  environmentName: 'dev',
  keyId: 3,
};
const now = 1_700_000_000_000;
const url = '/proxy/users?page=2';
const connection = { 'provider-config-key': 'github', 'connection-id': 'c1' };
const digestOf = (body: string) => createHash('sha256').update(body).digest('base64url');

/** The headers a gateway in remote mode sends, signed the way it signs them. */
function signed(
  options: {
    signingKey?: Buffer | KeyObject;
    method?: string;
    at?: number;
    who?: Record<string, unknown>;
    headers?: Record<string, string>;
    bodyDigest?: string;
  } = {},
) {
  const headers: Record<string, string> = options.headers ?? connection;
  const encoded = Buffer.from(JSON.stringify(options.who ?? caller), 'utf8').toString('base64url');
  const timestamp = String(options.at ?? now);
  const nonce = randomBytes(16).toString('base64url');
  const bodyDigest = options.bodyDigest ?? digestOf('');
  const signature = createHmac('sha256', options.signingKey ?? key)
    .update(
      proxyCallerSigningInput({
        timestamp,
        nonce,
        method: options.method ?? 'GET',
        url,
        caller: encoded,
        headers: PROXY_SIGNED_HEADERS.map((name) => headers[name] ?? ''),
        bodyDigest,
      }),
    )
    .digest('base64url');
  return {
    ...headers,
    [PROXY_INTERNAL_HEADERS.caller]: encoded,
    [PROXY_INTERNAL_HEADERS.timestamp]: timestamp,
    [PROXY_INTERNAL_HEADERS.nonce]: nonce,
    [PROXY_INTERNAL_HEADERS.bodyDigest]: bodyDigest,
    [PROXY_INTERNAL_HEADERS.signature]: signature,
  };
}

describe('GatewaySignatures', () => {
  it('returns the caller the gateway signed for this method, URL and connection', async () => {
    expect(await new GatewaySignatures(key).verify('GET', url, signed(), now)).toEqual({
      caller: { ...caller, credentialsOnAnyOrigin: false },
      bodyDigest: digestOf(''),
    });
  });

  it('accepts a signed request once: a replay of the same headers is refused', async () => {
    const signatures = new GatewaySignatures(key);
    const headers = signed();
    expect(await signatures.verify('GET', url, headers, now)).toBeDefined();
    expect(await signatures.verify('GET', url, headers, now + 1000)).toBeUndefined();
  });

  it('carries the permission to aim credentials at any origin only as signed', async () => {
    const signatures = new GatewaySignatures(key);
    const granted = signed({ who: { ...caller, credentialsOnAnyOrigin: true } });
    expect((await signatures.verify('GET', url, granted, now))?.caller.credentialsOnAnyOrigin).toBe(true);
    const forged = {
      ...signed(),
      [PROXY_INTERNAL_HEADERS.caller]: Buffer.from(
        JSON.stringify({ ...caller, credentialsOnAnyOrigin: true }),
      ).toString('base64url'),
    };
    expect(await signatures.verify('GET', url, forged, now)).toBeUndefined();
  });

  it.each([
    ['another key', () => signed({ signingKey: Buffer.from('x'.repeat(32)) }), 'GET', url],
    ['another method', () => signed(), 'DELETE', url],
    ['another URL', () => signed(), 'GET', '/proxy/admin'],
    ['a stale signature', () => signed({ at: now - 120_000 }), 'GET', url],
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
      () => ({ ...signed(), [PROXY_INTERNAL_HEADERS.bodyDigest]: digestOf('x') }),
      'GET',
      url,
    ],
    ['no nonce', () => ({ ...signed(), [PROXY_INTERNAL_HEADERS.nonce]: undefined }), 'GET', url],
    [
      'no signature',
      () => ({ [PROXY_INTERNAL_HEADERS.caller]: 'e30', [PROXY_INTERNAL_HEADERS.timestamp]: String(now) }),
      'GET',
      url,
    ],
  ])('refuses %s', async (_label, headers, method, requestUrl) => {
    expect(await new GatewaySignatures(key).verify(method, requestUrl, headers(), now)).toBeUndefined();
  });
});

describe('checkedBody', () => {
  const request = (body: string, headers: Record<string, string> = {}) =>
    Object.assign(Readable.from([Buffer.from(body)]), {
      headers: { 'content-length': String(Buffer.byteLength(body)), ...headers },
    }) as unknown as IncomingMessage;

  it('hands over the body the gateway signed', async () => {
    expect(await checkedBody(request('{"a":1}'), digestOf('{"a":1}'))).toEqual(Buffer.from('{"a":1}'));
  });

  it('refuses a body swapped on the way', async () => {
    expect(await checkedBody(request('{"a":2}'), digestOf('{"a":1}'))).toBe('mismatch');
  });

  it('lets only a large or chunked body through unsigned', async () => {
    expect(await checkedBody(request('{"a":2}'), PROXY_UNSIGNED_PAYLOAD)).toBe('mismatch');
    expect(await checkedBody(request('x', { 'content-length': '2000000' }), PROXY_UNSIGNED_PAYLOAD)).toBe(
      'stream',
    );
  });
});
