import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { PROXY_INTERNAL_HEADERS, PROXY_UNSIGNED_PAYLOAD } from '@switchboard/contracts';
import { proxyCallFixture, signedProxyCall } from '@switchboard/crypto/testing';
import { checkedBody, GatewaySignatures } from './internal-token';

const { key, caller, now, url } = proxyCallFixture;
const digestOf = (body: string) => createHash('sha256').update(body).digest('base64url');

/** The headers a gateway in remote mode sends. */
const signed = (): IncomingHttpHeaders => signedProxyCall();

describe('GatewaySignatures', () => {
  it('returns the caller the gateway signed', async () => {
    expect(await new GatewaySignatures(key).verify('GET', url, signed(), now)).toEqual({
      caller,
      bodyDigest: digestOf(''),
    });
  });

  it('accepts a signed request once: a replay of the same headers is refused', async () => {
    const signatures = new GatewaySignatures(key);
    const headers = signed();
    expect(await signatures.verify('GET', url, headers, now)).toBeDefined();
    expect(await signatures.verify('GET', url, headers, now + 1000)).toBeUndefined();
  });

  it('spends no nonce on a forged signature', async () => {
    const signatures = new GatewaySignatures(key);
    const headers = signed();
    const forged = { ...headers, [PROXY_INTERNAL_HEADERS.signature]: digestOf('forged') };
    expect(await signatures.verify('GET', url, forged, now)).toBeUndefined();
    expect(await signatures.verify('GET', url, headers, now)).toBeDefined();
  });

  it('refuses a request signed for another URL', async () => {
    expect(await new GatewaySignatures(key).verify('GET', '/proxy/admin', signed(), now)).toBeUndefined();
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
