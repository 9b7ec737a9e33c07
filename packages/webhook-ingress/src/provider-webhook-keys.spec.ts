import { createHmac, generateKeyPairSync, sign } from 'node:crypto';
import { WebhookSchema } from '@switchboard/providers';
import { SignJWT } from 'jose';
import { verificationKeyOf, verifySignature, verifyWebhook } from './provider-webhook';
import { hmac, request, webhookOf } from './provider-webhook.fixture';

/**
 * Signatures checked with more than a shared text secret: keys given hex- or base64-encoded, canonical
 * strings other than the body, public keys (Ed25519, RSA) and which stored key is used, and JWTs.
 */

describe('keys given encoded, canonical strings, public keys and JWTs', () => {
  const spki = (key: ReturnType<typeof generateKeyPairSync>['publicKey']) =>
    key.export({ type: 'spki', format: 'der' }).toString('base64');

  it("checks Squarespace's HMAC with the hex-decoded secret, not the secret's text", () => {
    const recipe = webhookOf('squarespace').signature!;
    const secret = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';
    const body = '{"id":"n-1","websiteId":"w-1","topic":"order.create"}';
    const right = createHmac('sha256', Buffer.from(secret, 'hex')).update(body).digest('hex');
    const asText = createHmac('sha256', secret).update(body).digest('hex');
    expect(verifySignature(recipe, request(body, { 'squarespace-signature': right }), secret)).toEqual({
      ok: true,
    });
    expect(verifySignature(recipe, request(body, { 'squarespace-signature': asText }), secret).ok).toBe(
      false,
    );
    expect(verifySignature(recipe, request(body, { 'squarespace-signature': right }), 'not-hex')).toEqual({
      ok: false,
      reason: 'the webhook secret is not hex',
    });
  });

  it("checks Dixa's t=<ms>,v1= header over t.body with the hex-decoded key", () => {
    const recipe = webhookOf('dixa').signature!;
    const secret = '00ff10ee20dd30cc40bb50aa60997088';
    const body = '{"event_id":"e-1","event_fqn":"CONVERSATION_CREATED"}';
    const t = String(Date.now());
    const v1 = createHmac('sha256', Buffer.from(secret, 'hex')).update(`${t}.${body}`).digest('hex');
    expect(verifySignature(recipe, request(body, { 'x-dixa-signature': `t=${t},v1=${v1}` }), secret).ok).toBe(
      true,
    );
    const old = String(Date.now() - 2 * 86_400_000);
    const v1Old = createHmac('sha256', Buffer.from(secret, 'hex')).update(`${old}.${body}`).digest('hex');
    expect(
      verifySignature(recipe, request(body, { 'x-dixa-signature': `t=${old},v1=${v1Old}` }), secret).ok,
    ).toBe(false);
  });

  it("accepts Standard Webhooks' published vector with its whsec_ base64 key (Fathom, Recall.ai, Clerk's svix-)", () => {
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const body = '{"test": 2432232314}';
    const at = 1614265330;
    const signature = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=';
    for (const [provider, prefix] of [
      ['fathom', 'webhook'],
      ['recall-ai', 'webhook'],
      ['clerk', 'svix'],
    ] as const) {
      const recipe = webhookOf(provider).signature!;
      const headers = (sig: string) => ({
        [`${prefix}-id`]: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
        [`${prefix}-timestamp`]: String(at),
        [`${prefix}-signature`]: sig,
      });
      // A rotated-out key's signature beside the right one: any one may match.
      expect(
        verifySignature(recipe, request(body, headers(`v1,AAAA ${signature}`)), secret, at * 1000),
      ).toEqual({
        ok: true,
      });
      expect(verifySignature(recipe, request(`${body} `, headers(signature)), secret, at * 1000).ok).toBe(
        false,
      );
      expect(verifySignature(recipe, request(body, headers(signature)), secret, (at + 301) * 1000)).toEqual({
        ok: false,
        reason: 'signature timestamp outside the tolerance',
      });
    }
  });

  it("checks Follow Up Boss's HMAC over the base64 of the body", () => {
    const recipe = webhookOf('followupboss').signature!;
    const body = '{"eventId":"ev-1","event":"peopleCreated","resourceIds":[12]}';
    const signature = hmac('sha256', 'system-key', Buffer.from(body).toString('base64'));
    expect(verifySignature(recipe, request(body, { 'fub-signature': signature }), 'system-key').ok).toBe(
      true,
    );
    expect(
      verifySignature(
        recipe,
        request(body, { 'fub-signature': hmac('sha256', 'system-key', body) }),
        'system-key',
      ).ok,
    ).toBe(false);
  });

  it("checks HighLevel's Ed25519 signature with the key the integration stores, else the pinned one", () => {
    const recipe = webhookOf('highlevel').signature!;
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const body = '{"type":"ContactCreate","locationId":"loc-1","webhookId":"wh-1"}';
    const signature = sign(null, Buffer.from(body), privateKey).toString('base64');
    const stored = verificationKeyOf(recipe, { webhookSecret: spki(publicKey), clientSecret: 'cs' })!;
    expect(verifySignature(recipe, request(body, { 'x-ghl-signature': signature }), stored)).toEqual({
      ok: true,
    });
    expect(verifySignature(recipe, request(`${body} `, { 'x-ghl-signature': signature }), stored).ok).toBe(
      false,
    );
    // A PEM works as well as base64 DER.
    const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    expect(verifySignature(recipe, request(body, { 'x-ghl-signature': signature }), pem).ok).toBe(true);
    // Without a stored key the catalog's (HighLevel's own) key is used: our signature does not verify with it.
    const pinned = verificationKeyOf(recipe, { webhookSecret: null, clientSecret: 'cs' });
    expect(pinned).toContain('MCowBQYDK2VwAyEAi2HR1srL4o18O8BRa7gVJY7G7bupbN3H9AwJrHCDiOg=');
    expect(verifySignature(recipe, request(body, { 'x-ghl-signature': signature }), pinned!)).toEqual({
      ok: false,
      reason: 'signature mismatch',
    });
    // An RSA key is no Ed25519 key.
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    expect(
      verifySignature(recipe, request(body, { 'x-ghl-signature': signature }), spki(rsa.publicKey)),
    ).toEqual({
      ok: false,
      reason: 'the public key is not a readable ed25519 key',
    });
  });

  it("checks Wise's RSA-SHA256 signature with the integration's webhook_public_key before any other key", () => {
    const recipe = webhookOf('wise').signature!;
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const body = '{"event_type":"transfers#state-change","data":{"resource":{"id":1}}}';
    const signed = request(body, {
      'x-signature-sha256': sign('sha256', Buffer.from(body), privateKey).toString('base64'),
    });
    const other = spki(generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey);
    const key = verificationKeyOf(recipe, {
      webhookPublicKey: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      webhookSecret: other,
      clientSecret: 'cs',
    })!;
    expect(verifySignature(recipe, signed, key)).toEqual({ ok: true });
    // Without one, a key stored as the webhook secret is used; Wise pins none.
    expect(verificationKeyOf(recipe, { webhookSecret: other, clientSecret: 'cs' })).toBe(other);
    expect(verifySignature(recipe, signed, other)).toEqual({ ok: false, reason: 'signature mismatch' });
    expect(
      verificationKeyOf(recipe, { webhookPublicKey: null, webhookSecret: null, clientSecret: 'cs' }),
    ).toBe(null);
  });

  it('never keys an HMAC with a stored public key', () => {
    const recipe = webhookOf('linear').signature!;
    expect(
      verificationKeyOf(recipe, { webhookPublicKey: 'pk', webhookSecret: 'ws', clientSecret: 'cs' }),
    ).toBe('ws');
  });

  it('checks an RSA-SHA256 signature with the public key, and nothing signed by another key', () => {
    const recipe = WebhookSchema.parse({
      signature: { header: 'x-rsa-signature', algorithm: 'rsa-sha256', encoding: 'base64' },
    }).signature!;
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const body = '{"event":"x"}';
    const signed = (key: typeof privateKey) => sign('sha256', Buffer.from(body), key).toString('base64');
    const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    expect(verifySignature(recipe, request(body, { 'x-rsa-signature': signed(privateKey) }), pem).ok).toBe(
      true,
    );
    expect(
      verifySignature(recipe, request(body, { 'x-rsa-signature': signed(other.privateKey) }), pem).ok,
    ).toBe(false);
  });

  it("checks Dialpad's HS256 JWT body and hands its claims on; any other token is refused", async () => {
    const recipe = webhookOf('dialpad').signature!;
    const secret = 'dialpad-webhook-secret';
    const claims = { call_id: 4242, state: 'hangup', target: { id: 7, type: 'user' } };
    const token = (key: string, alg = 'HS256', expiresIn = '5m') =>
      new SignJWT(claims)
        .setProtectedHeader({ alg })
        .setIssuedAt()
        .setExpirationTime(expiresIn)
        .sign(new TextEncoder().encode(key));
    const good = await token(secret);
    const verdict = await verifyWebhook(recipe, request(good, { 'content-type': 'application/jwt' }), secret);
    expect(verdict).toEqual({ ok: true, claims: expect.objectContaining(claims) as unknown });
    expect(await verifyWebhook(recipe, request(await token('another-secret')), secret)).toEqual({
      ok: false,
      reason: 'signature mismatch',
    });
    expect(await verifyWebhook(recipe, request(await token(secret, 'HS512')), secret)).toEqual({
      ok: false,
      reason: 'the token is not signed with HS256',
    });
    expect(await verifyWebhook(recipe, request(await token(secret, 'HS256', '-1m')), secret)).toEqual({
      ok: false,
      reason: 'the token has expired',
    });
    // An unsigned token (alg none) and plain JSON are no signed webhooks.
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.`;
    expect((await verifyWebhook(recipe, request(none), secret)).ok).toBe(false);
    expect((await verifyWebhook(recipe, request(JSON.stringify(claims)), secret)).ok).toBe(false);
  });
});

describe('JWTs signed with a public-key algorithm', () => {
  it.each([
    ['ed25519', 'EdDSA', () => generateKeyPairSync('ed25519')],
    ['rsa-sha256', 'RS256', () => generateKeyPairSync('rsa', { modulusLength: 2048 })],
  ] as const)('checks a %s (%s) token body with the public key', async (algorithm, alg, generate) => {
    const recipe = WebhookSchema.parse({ signature: { scheme: 'jwt', algorithm } }).signature!;
    const { publicKey, privateKey } = generate();
    const other = generate();
    const key = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
    const signed = (signer: typeof privateKey) =>
      new SignJWT({ event: 'created' }).setProtectedHeader({ alg }).setExpirationTime('1m').sign(signer);
    expect(await verifyWebhook(recipe, request(await signed(privateKey)), key)).toEqual({
      ok: true,
      claims: expect.objectContaining({ event: 'created' }) as unknown,
    });
    expect(await verifyWebhook(recipe, request(await signed(other.privateKey)), key)).toEqual({
      ok: false,
      reason: 'signature mismatch',
    });
  });

  it('checks a token in a header against the body beside it, which stays the webhook', async () => {
    const recipe = WebhookSchema.parse({
      signature: { scheme: 'jwt', header: 'authorization', prefix: 'Bearer ', algorithm: 'hmac-sha256' },
    }).signature!;
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setExpirationTime('1m')
      .sign(new TextEncoder().encode('signing-secret'));
    const body = '{"event":{"type":"create_item"}}';
    expect(
      await verifyWebhook(recipe, request(body, { authorization: `Bearer ${token}` }), 'signing-secret'),
    ).toEqual({
      ok: true,
    });
    expect(await verifyWebhook(recipe, request(body, {}), 'signing-secret')).toEqual({
      ok: false,
      reason: 'missing authorization header',
    });
  });
});
