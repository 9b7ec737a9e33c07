import {
  createHmac,
  createVerify,
  generateKeyPairSync,
  randomBytes,
  timingSafeEqual,
  type KeyObject,
} from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ResolvedProvider } from '@switchboard/providers';
import {
  LoopbackHttpFake,
  oauth1SignatureBase,
  oauth1SigningKey,
  parseOAuthAuthorization,
  requestBody,
} from '@switchboard/testing';
import { ProviderExchangeError } from './exchange.errors';
import {
  buildOAuth1AuthorizeUrl,
  exchangeOAuth1Verifier,
  requestOAuth1RequestToken,
  signOAuth1Request,
  type OAuth1SignatureMethod,
} from './oauth1.client';
import { closeProviderEgress, configureProviderEgress } from './provider-egress';

const unexpected = (): never => {
  throw new Error('expected the call to fail');
};

/**
 * A fake OAuth 1.0a provider that verifies every signature itself, straight from RFC 5849 §3.4 with
 * node:crypto (no OAuth library), so a signing mistake on our side cannot be mirrored by the fake.
 */

interface Consumer {
  secret: string;
  method: OAuth1SignatureMethod;
  publicKey?: KeyObject;
}

class FakeOAuth1Provider extends LoopbackHttpFake {
  readonly consumers = new Map<string, Consumer>();
  private readonly temporary = new Map<
    string,
    { secret: string; consumer: string; callback: string; verifier?: string }
  >();
  private readonly access = new Map<string, { secret: string; consumer: string }>();
  private readonly nonces = new Set<string>();
  readonly verified: string[] = [];

  protected async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await requestBody(req);
    const url = new URL(req.url ?? '/', this.url);
    const form = (req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')
      ? body
      : '';
    const reply = (status: number, text: string) => {
      res.writeHead(status, { 'content-type': 'application/x-www-form-urlencoded' });
      res.end(text);
    };

    if (url.pathname === '/authorize') {
      // The end user consents: the provider sends the browser back with a verifier.
      const pending = this.temporary.get(url.searchParams.get('oauth_token') ?? '');
      if (!pending) return reply(400, 'oauth_problem=token_rejected');
      pending.verifier = randomBytes(8).toString('hex');
      const back = new URL(pending.callback);
      back.searchParams.set('oauth_token', url.searchParams.get('oauth_token') ?? '');
      back.searchParams.set('oauth_verifier', pending.verifier);
      back.searchParams.set('seen_scope', url.searchParams.get('scope') ?? '');
      res.writeHead(302, { location: back.toString() });
      return void res.end();
    }

    const header = parseOAuthAuthorization(req.headers.authorization);
    if (!header) return reply(401, 'oauth_problem=parameter_absent');
    const consumer = this.consumers.get(header['oauth_consumer_key'] ?? '');
    if (!consumer) return reply(401, 'oauth_problem=consumer_key_unknown');
    const token = header['oauth_token'];
    const tokenSecret = token ? (this.temporary.get(token)?.secret ?? this.access.get(token)?.secret) : '';
    if (tokenSecret === undefined) return reply(401, 'oauth_problem=token_rejected');
    const problem = this.checkSignature(req.method ?? 'GET', url, form, header, consumer, tokenSecret);
    if (problem) return reply(401, `oauth_problem=${problem}`);
    this.verified.push(url.pathname);

    if (url.pathname === '/request_token') {
      const key = `rt-${randomBytes(6).toString('hex')}`;
      const secret = `rts-${randomBytes(6).toString('hex')}`;
      this.temporary.set(key, {
        secret,
        consumer: header['oauth_consumer_key']!,
        callback: header['oauth_callback'] ?? '',
      });
      return reply(200, `oauth_token=${key}&oauth_token_secret=${secret}&oauth_callback_confirmed=true`);
    }
    if (url.pathname === '/access_token') {
      const pending = token ? this.temporary.get(token) : undefined;
      if (!pending || !pending.verifier || pending.verifier !== header['oauth_verifier'])
        return reply(401, 'oauth_problem=verifier_invalid');
      this.temporary.delete(token!);
      const key = `at-${randomBytes(6).toString('hex')}`;
      const secret = `ats-${randomBytes(6).toString('hex')}`;
      this.access.set(key, { secret, consumer: pending.consumer });
      return reply(200, `oauth_token=${key}&oauth_token_secret=${secret}&user_id=42`);
    }
    if (url.pathname === '/api/resource') {
      if (!token || !this.access.has(token)) return reply(401, 'oauth_problem=token_rejected');
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ ok: true }));
    }
    reply(404, 'oauth_problem=not_found');
  }

  /** RFC 5849 §3.4.1 (base string) and §3.4.2–3.4.4 (signatures), plus nonce/timestamp checks (§3.3). */
  private checkSignature(
    method: string,
    url: URL,
    form: string,
    header: Record<string, string>,
    consumer: Consumer,
    tokenSecret: string,
  ): string | undefined {
    if (header['oauth_signature_method'] !== consumer.method) return 'signature_method_rejected';
    const timestamp = Number(header['oauth_timestamp']);
    if (!Number.isInteger(timestamp) || Math.abs(Date.now() / 1000 - timestamp) > 300)
      return 'timestamp_refused';
    const nonce = `${header['oauth_timestamp']}:${header['oauth_nonce']}`;
    if (!header['oauth_nonce'] || this.nonces.has(nonce)) return 'nonce_used';
    this.nonces.add(nonce);

    const base = oauth1SignatureBase(method, url, header, new URLSearchParams(form));
    const key = oauth1SigningKey(consumer.secret, tokenSecret);
    const signature = header['oauth_signature'] ?? '';
    const same = (a: string, b: string) =>
      a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
    switch (consumer.method) {
      case 'HMAC-SHA1':
        return same(createHmac('sha1', key).update(base).digest('base64'), signature)
          ? undefined
          : 'signature_invalid';
      case 'RSA-SHA1':
        return createVerify('RSA-SHA1').update(base).verify(consumer.publicKey!, signature, 'base64')
          ? undefined
          : 'signature_invalid';
      case 'PLAINTEXT':
        return same(key, signature) ? undefined : 'signature_invalid';
    }
  }
}

const provider = (fake: FakeOAuth1Provider, method: OAuth1SignatureMethod = 'HMAC-SHA1'): ResolvedProvider =>
  ({
    name: 'fake-oauth1',
    display_name: 'Fake OAuth1',
    categories: ['other'],
    docs: 'https://example.com/docs',
    auth_mode: 'OAUTH1',
    request_url: `${fake.url}/request_token`,
    authorization_url: `${fake.url}/authorize`,
    token_url: `${fake.url}/access_token`,
    signature_method: method,
    scope_separator: ',',
    authorization_params: { expiration: 'never' },
  }) as ResolvedProvider;

// RSA key generation is slow on a loaded 2-core machine.
jest.setTimeout(20_000);

describe('OAuth 1.0a client against a fake provider that verifies signatures', () => {
  const fake = new FakeOAuth1Provider();
  const consumer = { key: 'consumer-hmac', secret: 'hmac secret & more!' };
  const callbackUrl = 'https://switchboard.example/oauth/callback';

  beforeAll(async () => {
    configureProviderEgress('127.0.0.1'); // the fake provider listens on loopback
    await fake.start();
    fake.consumers.set(consumer.key, { secret: consumer.secret, method: 'HMAC-SHA1' });
  });
  afterAll(async () => {
    await fake.stop();
    await closeProviderEgress();
  });

  it('runs the three-legged flow with HMAC-SHA1 and signs API calls with the access token', async () => {
    const requestToken = await requestOAuth1RequestToken({ provider: provider(fake), consumer, callbackUrl });
    expect(requestToken.key).toMatch(/^rt-/);

    const authorizeUrl = buildOAuth1AuthorizeUrl({
      provider: provider(fake),
      requestToken: requestToken.key,
      scopes: ['read', 'write'],
    });
    const authorize = new URL(authorizeUrl);
    expect(Object.fromEntries(authorize.searchParams)).toEqual({
      oauth_token: requestToken.key,
      scope: 'read,write',
      expiration: 'never',
    });

    // The browser's trip: the provider redirects back to our callback with the verifier.
    const consent = await fetch(authorizeUrl, { redirect: 'manual' });
    const callback = new URL(consent.headers.get('location') ?? '');
    expect(callback.origin + callback.pathname).toBe(callbackUrl);
    expect(callback.searchParams.get('seen_scope')).toBe('read,write');

    const credentials = await exchangeOAuth1Verifier({
      provider: provider(fake),
      consumer,
      requestToken,
      verifier: callback.searchParams.get('oauth_verifier') ?? '',
    });
    expect(credentials).toMatchObject({
      type: 'OAUTH1',
      oauth_token: expect.stringMatching(/^at-/),
      raw: { user_id: '42' },
    });
    expect(credentials.oauth_token_secret).toMatch(/^ats-/);

    // The proxy's use: query parameters (with a space and a plus) and a form body are part of the signature.
    const signed = signOAuth1Request({
      method: 'POST',
      url: `${fake.url}/api/resource?q=hello world+again&list=b&list=a`,
      consumer,
      token: { key: credentials.oauth_token, secret: credentials.oauth_token_secret },
      form: { name: 'Ada Lovelace', note: "it's 100%" },
    });
    const api = await fetch(signed.url, {
      method: 'POST',
      headers: { authorization: signed.authorization, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ name: 'Ada Lovelace', note: "it's 100%" }).toString(),
    });
    expect(await api.text()).toBe('{"ok":true}');
    expect(fake.verified).toEqual(['/request_token', '/access_token', '/api/resource']);
  });

  it('refuses a verifier the provider rejects, with a coded error that does not carry secrets', async () => {
    const requestToken = await requestOAuth1RequestToken({ provider: provider(fake), consumer, callbackUrl });
    const error = await exchangeOAuth1Verifier({
      provider: provider(fake),
      consumer,
      requestToken,
      verifier: 'forged-verifier',
    }).then(unexpected, (e: unknown) => e as ProviderExchangeError);
    expect(error).toBeInstanceOf(ProviderExchangeError);
    expect(error).toMatchObject({
      code: 'invalid_credentials',
      details: { stage: 'oauth1_access_token', providerStatus: 401 },
    });
    expect(error.message).toContain('verifier_invalid');
    expect(error.message).not.toContain(requestToken.secret);
    expect(error.message).not.toContain(consumer.secret);
  });

  it('is refused when the consumer secret is wrong (the fake really checks the signature)', async () => {
    const error = await requestOAuth1RequestToken({
      provider: provider(fake),
      consumer: { key: consumer.key, secret: 'not the secret' },
      callbackUrl,
    }).then(unexpected, (e: unknown) => e as ProviderExchangeError);
    expect(error).toMatchObject({ code: 'invalid_credentials', details: { stage: 'oauth1_request_token' } });
    expect(error.message).toContain('signature_invalid');
    expect(error.message).not.toContain('not the secret');
  });

  it('signs with RSA-SHA1 using the private key held as the client secret', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const rsa = {
      key: 'consumer-rsa',
      secret: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    };
    fake.consumers.set(rsa.key, { secret: '', method: 'RSA-SHA1', publicKey });
    const requestToken = await requestOAuth1RequestToken({
      provider: provider(fake, 'RSA-SHA1'),
      consumer: rsa,
      callbackUrl,
    });
    expect(requestToken.key).toMatch(/^rt-/);
  });

  it('signs with PLAINTEXT', async () => {
    const plain = { key: 'consumer-plain', secret: 'plain/secret' };
    fake.consumers.set(plain.key, { secret: plain.secret, method: 'PLAINTEXT' });
    const requestToken = await requestOAuth1RequestToken({
      provider: provider(fake, 'PLAINTEXT'),
      consumer: plain,
      callbackUrl,
    });
    expect(requestToken.secret).toMatch(/^rts-/);
  });
});
