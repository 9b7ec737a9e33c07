import { randomBytes } from 'node:crypto';
import { parseEnv } from '@switchboard/config';
import { envSchema } from './env';

const base = { NATS_URL: 'nats://127.0.0.1:4222', REDIS_URL: 'redis://127.0.0.1:6379' };
const token = randomBytes(24).toString('base64url');

describe('gateway configuration', () => {
  it('trusts no X-Forwarded-For by default; a hop count or proxy CIDRs when told; refuses anything else', () => {
    expect(parseEnv(envSchema, base).SWITCHBOARD_TRUST_PROXY).toBe(false);
    expect(parseEnv(envSchema, { ...base, SWITCHBOARD_TRUST_PROXY: '1' }).SWITCHBOARD_TRUST_PROXY).toBe(1);
    expect(
      parseEnv(envSchema, { ...base, SWITCHBOARD_TRUST_PROXY: '10.0.0.0/8, fd00::/8,192.0.2.7' })
        .SWITCHBOARD_TRUST_PROXY,
    ).toEqual(['10.0.0.0/8', 'fd00::/8', '192.0.2.7']);
    for (const bad of ['true', '10.0.0.0/33', 'lb.internal', '10.0.0.0/8,*'])
      expect(() => parseEnv(envSchema, { ...base, SWITCHBOARD_TRUST_PROXY: bad })).toThrow(
        /SWITCHBOARD_TRUST_PROXY/,
      );
  });

  it('needs neither the proxy service URL nor a signing secret in embedded mode (the default)', () => {
    const env = parseEnv(envSchema, base);
    expect(env.SWITCHBOARD_PROXY_MODE).toBe('embedded');
    expect(env.SWITCHBOARD_PROXY_URL).toBeUndefined();
  });

  it('verifies and stores provider webhooks in process unless told to hand them to the relay', () => {
    expect(parseEnv(envSchema, base).SWITCHBOARD_WEBHOOK_INGRESS_MODE).toBe('embedded');
    expect(
      parseEnv(envSchema, { ...base, SWITCHBOARD_WEBHOOK_INGRESS_MODE: 'remote' })
        .SWITCHBOARD_WEBHOOK_INGRESS_MODE,
    ).toBe('remote');
    expect(() => parseEnv(envSchema, { ...base, SWITCHBOARD_WEBHOOK_INGRESS_MODE: 'relay' })).toThrow(
      /SWITCHBOARD_WEBHOOK_INGRESS_MODE/,
    );
  });

  it('refuses to start in remote mode without the proxy service URL, naming the variable', () => {
    expect(() =>
      parseEnv(envSchema, { ...base, SWITCHBOARD_PROXY_MODE: 'remote', SWITCHBOARD_INTERNAL_TOKEN: token }),
    ).toThrow(/SWITCHBOARD_PROXY_URL: required when SWITCHBOARD_PROXY_MODE=remote/);
  });

  it('refuses to start in remote mode with no way to sign for the proxy service', () => {
    let message = '';
    try {
      parseEnv(envSchema, {
        ...base,
        SWITCHBOARD_PROXY_MODE: 'remote',
        SWITCHBOARD_PROXY_URL: 'http://127.0.0.1:3012',
      });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/SWITCHBOARD_INTERNAL_TOKEN: required when SWITCHBOARD_PROXY_MODE=remote/);
  });

  it('starts in remote mode with the URL and a shared token', () => {
    const env = parseEnv(envSchema, {
      ...base,
      SWITCHBOARD_PROXY_MODE: 'remote',
      SWITCHBOARD_PROXY_URL: 'http://127.0.0.1:3012',
      SWITCHBOARD_INTERNAL_TOKEN: token,
    });
    expect(env.SWITCHBOARD_PROXY_URL).toBe('http://127.0.0.1:3012');
  });

  it('allows no other origin for the connect page by default, and refuses an allowed origin that is not one', () => {
    expect(parseEnv(envSchema, base).SWITCHBOARD_CONNECT_ALLOWED_ORIGINS).toEqual([]);
    expect(
      parseEnv(envSchema, {
        ...base,
        SWITCHBOARD_CONNECT_ALLOWED_ORIGINS: 'https://app.example.com, http://127.0.0.1:8080',
      }).SWITCHBOARD_CONNECT_ALLOWED_ORIGINS,
    ).toEqual(['https://app.example.com', 'http://127.0.0.1:8080']);
    for (const bad of ['*', 'https://app.example.com/path', 'javascript:alert(1)']) {
      expect(() => parseEnv(envSchema, { ...base, SWITCHBOARD_CONNECT_ALLOWED_ORIGINS: bad })).toThrow(
        /SWITCHBOARD_CONNECT_ALLOWED_ORIGINS: .* is not an origin/,
      );
    }
  });
});
