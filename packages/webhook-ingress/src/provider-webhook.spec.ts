import { createHash, createHmac, generateKeyPairSync, sign } from 'node:crypto';
import { loadCatalog, type WebhookDefinition, WebhookSchema } from '@switchboard/providers';
import { SignJWT } from 'jose';
import {
  findHandshake,
  handshakeReply,
  parseBody,
  WebhookBodyTooDeepError,
  routingLookups,
  subscriptionTypesOf,
  verificationKeyOf,
  verifySignature,
  verifyWebhook,
  type WebhookRequest,
} from './provider-webhook';

const catalog = loadCatalog();
const webhookOf = (provider: string): WebhookDefinition => {
  const definition = catalog.get(provider)?.webhook;
  if (!definition) throw new Error(`${provider} has no webhook section`);
  return definition;
};

function request(
  body: string | Buffer,
  headers: Record<string, string> = {},
  url = 'https://sb.example/webhook/e/k',
): WebhookRequest {
  const rawBody = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  return {
    rawBody,
    headers,
    query: new URL(url).searchParams,
    method: 'POST',
    url,
    parsed: parseBody(rawBody, headers['content-type']),
  };
}

const hmac = (
  algorithm: 'sha256' | 'sha1',
  secret: string,
  message: string | Buffer,
  encoding: 'hex' | 'base64' = 'hex',
) => createHmac(algorithm, secret).update(message).digest(encoding);

const nowSeconds = () => Math.floor(Date.now() / 1000);

describe('verifySignature with the catalog recipes', () => {
  it("accepts GitHub's documented test vector and refuses a one-byte change", () => {
    const recipe = webhookOf('github').signature!;
    const signature = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';
    expect(
      verifySignature(
        recipe,
        request('Hello, World!', { 'x-hub-signature-256': signature }),
        "It's a Secret to Everybody",
      ),
    ).toEqual({ ok: true });
    expect(
      verifySignature(
        recipe,
        request('Hello, World?', { 'x-hub-signature-256': signature }),
        "It's a Secret to Everybody",
      ).ok,
    ).toBe(false);
    expect(verifySignature(recipe, request('Hello, World!', {}), "It's a Secret to Everybody")).toEqual({
      ok: false,
      reason: 'missing x-hub-signature-256 header',
    });
  });

  it('checks the raw bytes: the same JSON re-serialised does not verify', () => {
    const recipe = webhookOf('github').signature!;
    const raw = '{ "action": "opened",  "number": 1 }';
    const signature = `sha256=${hmac('sha256', 's3cret', raw)}`;
    expect(verifySignature(recipe, request(raw, { 'x-hub-signature-256': signature }), 's3cret').ok).toBe(
      true,
    );
    const reserialised = JSON.stringify(JSON.parse(raw));
    expect(
      verifySignature(recipe, request(reserialised, { 'x-hub-signature-256': signature }), 's3cret').ok,
    ).toBe(false);
  });

  it('verifies non-UTF-8 bodies byte for byte', () => {
    const recipe = webhookOf('github').signature!;
    const raw = Buffer.from([0xff, 0xfe, 0x00, 0x80, 0x41]);
    const signature = `sha256=${hmac('sha256', 's3cret', raw)}`;
    expect(verifySignature(recipe, request(raw, { 'x-hub-signature-256': signature }), 's3cret').ok).toBe(
      true,
    );
  });

  it("checks Slack's v0 signature over v0:{timestamp}:{body} within five minutes", () => {
    const recipe = webhookOf('slack').signature!;
    const body = 'token=x&team_id=T1&event=y';
    const sign = (ts: number) => `v0=${hmac('sha256', 'slack-signing', `v0:${ts}:${body}`)}`;
    const at = nowSeconds();
    const headers = (ts: number) => ({
      'x-slack-request-timestamp': String(ts),
      'x-slack-signature': sign(ts),
    });
    expect(verifySignature(recipe, request(body, headers(at)), 'slack-signing')).toEqual({ ok: true });
    expect(verifySignature(recipe, request(body, headers(at - 301)), 'slack-signing')).toEqual({
      ok: false,
      reason: 'signature timestamp outside the tolerance',
    });
    // The timestamp is part of what is signed: moving it breaks the signature.
    expect(
      verifySignature(
        recipe,
        request(body, { 'x-slack-request-timestamp': String(at - 1), 'x-slack-signature': sign(at) }),
        'slack-signing',
      ).ok,
    ).toBe(false);
  });

  it("checks Stripe's t=,v1= header with a 300 s tolerance and accepts any one valid v1", () => {
    const recipe = webhookOf('stripe').signature!;
    const body = '{"id":"evt_1","type":"charge.succeeded","account":"acct_9"}';
    const v1 = (t: number, secret = 'whsec_stripe') => hmac('sha256', secret, `${t}.${body}`);
    // Whole seconds: the check may read the clock a second later than t was taken, so a future stamp is
    // tried a few seconds past the tolerance (301 s flaked when the second turned in between).
    const t = nowSeconds();
    const ok = verifySignature(
      recipe,
      request(body, { 'stripe-signature': `t=${t},v1=${v1(t, 'old')},v1=${v1(t)},v0=zzz` }),
      'whsec_stripe',
    );
    expect(ok).toEqual({ ok: true });
    expect(
      verifySignature(
        recipe,
        request(body, { 'stripe-signature': `t=${t - 301},v1=${v1(t - 301)}` }),
        'whsec_stripe',
      ).ok,
    ).toBe(false);
    expect(
      verifySignature(
        recipe,
        request(body, { 'stripe-signature': `t=${t + 305},v1=${v1(t + 305)}` }),
        'whsec_stripe',
      ).ok,
    ).toBe(false);
    expect(
      verifySignature(
        recipe,
        request(body, { 'stripe-signature': `t=${t - 299},v1=${v1(t - 299)}` }),
        'whsec_stripe',
      ).ok,
    ).toBe(true);
    expect(verifySignature(recipe, request(body, { 'stripe-signature': `t=${t}` }), 'whsec_stripe')).toEqual({
      ok: false,
      reason: 'no signature in the header',
    });
    expect(
      verifySignature(
        recipe,
        request(body, { 'stripe-signature': `t=${t},v1=${v1(t).slice(0, 40)}` }),
        'whsec_stripe',
      ).ok,
    ).toBe(false);
  });

  it("checks Shopify's base64 HMAC", () => {
    const recipe = webhookOf('shopify').signature!;
    const body = '{"id":1}';
    expect(
      verifySignature(
        recipe,
        request(body, { 'x-shopify-hmac-sha256': hmac('sha256', 'shp', body, 'base64') }),
        'shp',
      ).ok,
    ).toBe(true);
    expect(
      verifySignature(
        recipe,
        request(body, { 'x-shopify-hmac-sha256': hmac('sha256', 'other', body, 'base64') }),
        'shp',
      ).ok,
    ).toBe(false);
  });

  it("checks HubSpot's v3 signature over method, URL, body and millisecond timestamp", () => {
    const recipe = webhookOf('hubspot').signature!;
    const body = '[{"portalId":62515,"subscriptionType":"contact.creation"}]';
    const url = 'https://sb.example/webhook/3f1c/hubspot?x=1';
    const ts = String(Date.now());
    const signature = hmac('sha256', 'client-secret', `POST${url}${body}${ts}`, 'base64');
    const headers = { 'x-hubspot-signature-v3': signature, 'x-hubspot-request-timestamp': ts };
    expect(verifySignature(recipe, request(body, headers, url), 'client-secret').ok).toBe(true);
    expect(
      verifySignature(
        recipe,
        request(body, headers, 'https://sb.example/webhook/3f1c/hubspot'),
        'client-secret',
      ).ok,
    ).toBe(false);
    const stale = String(Date.now() - 301_000);
    const staleHeaders = {
      'x-hubspot-signature-v3': hmac('sha256', 'client-secret', `POST${url}${body}${stale}`, 'base64'),
      'x-hubspot-request-timestamp': stale,
    };
    expect(verifySignature(recipe, request(body, staleHeaders, url), 'client-secret').ok).toBe(false);
  });

  it("checks Zendesk's base64 HMAC over timestamp + body with an ISO timestamp", () => {
    const recipe = webhookOf('zendesk').signature!;
    const body = '{"type":"zen:event-type:ticket.created"}';
    const ts = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const headers = {
      'x-zendesk-webhook-signature': hmac('sha256', 'zd', `${ts}${body}`, 'base64'),
      'x-zendesk-webhook-signature-timestamp': ts,
    };
    expect(verifySignature(recipe, request(body, headers), 'zd').ok).toBe(true);
    expect(verifySignature(recipe, request(`${body} `, headers), 'zd').ok).toBe(false);
  });

  it("checks Recharge's plain SHA-256 of the client secret and body, and refuses an HMAC of it", () => {
    const recipe = webhookOf('recharge').signature!;
    const body = '{"charge":{"id":1}}';
    const digest = createHash('sha256').update(`rc-secret${body}`).digest('hex');
    expect(verifySignature(recipe, request(body, { 'x-recharge-hmac-sha256': digest }), 'rc-secret')).toEqual(
      { ok: true },
    );
    expect(
      verifySignature(recipe, request(`${body} `, { 'x-recharge-hmac-sha256': digest }), 'rc-secret').ok,
    ).toBe(false);
    expect(
      verifySignature(recipe, request(body, { 'x-recharge-hmac-sha256': digest }), 'other-secret').ok,
    ).toBe(false);
    // What a receiver that took the header's name at its word would send.
    expect(
      verifySignature(
        recipe,
        request(body, { 'x-recharge-hmac-sha256': hmac('sha256', 'rc-secret', body) }),
        'rc-secret',
      ).ok,
    ).toBe(false);
  });

  it("checks Intercom's sha1 signature with the client secret recipe", () => {
    const recipe = webhookOf('intercom').signature!;
    expect(recipe.secret).toBe('client_secret');
    const body = '{"type":"notification_event","app_id":"abc"}';
    expect(
      verifySignature(
        recipe,
        request(body, { 'x-hub-signature': `sha1=${hmac('sha1', 'ics', body)}` }),
        'ics',
      ).ok,
    ).toBe(true);
    expect(
      verifySignature(
        recipe,
        request(body, { 'x-hub-signature': `sha1=${hmac('sha256', 'ics', body)}` }),
        'ics',
      ).ok,
    ).toBe(false);
  });

  it("checks Linear's signature and its body timestamp (one minute)", () => {
    const recipe = webhookOf('linear').signature!;
    const fresh = JSON.stringify({ action: 'create', organizationId: 'org-1', webhookTimestamp: Date.now() });
    expect(
      verifySignature(recipe, request(fresh, { 'linear-signature': hmac('sha256', 'lin', fresh) }), 'lin').ok,
    ).toBe(true);
    const old = JSON.stringify({
      action: 'create',
      organizationId: 'org-1',
      webhookTimestamp: Date.now() - 61_000,
    });
    expect(
      verifySignature(recipe, request(old, { 'linear-signature': hmac('sha256', 'lin', old) }), 'lin').ok,
    ).toBe(false);
  });

  it('checks Jira and Notion sha256= signatures', () => {
    const body = '{"webhookEvent":"jira:issue_created","user":{"accountId":"5b10"}}';
    expect(
      verifySignature(
        webhookOf('jira').signature!,
        request(body, { 'x-hub-signature': `sha256=${hmac('sha256', 'j', body)}` }),
        'j',
      ).ok,
    ).toBe(true);
    const notion = '{"type":"page.created","workspace_id":"ws-1"}';
    expect(
      verifySignature(
        webhookOf('notion').signature!,
        request(notion, { 'x-notion-signature': `sha256=${hmac('sha256', 'n', notion)}` }),
        'n',
      ).ok,
    ).toBe(true);
  });
});

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

describe('handshakes', () => {
  it("answers Slack's url_verification with the challenge", () => {
    const body = JSON.stringify({
      token: 't',
      challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P',
      type: 'url_verification',
    });
    const req = request(body, { 'content-type': 'application/json' });
    const handshake = findHandshake(webhookOf('slack'), req);
    expect(handshake?.verify_signature).toBe(true);
    expect(handshakeReply(handshake!, req)).toEqual({
      status: 200,
      contentType: 'text/plain; charset=utf-8',
      body: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P',
    });
    expect(
      findHandshake(webhookOf('slack'), request('{"type":"event_callback","team_id":"T1"}')),
    ).toBeUndefined();
  });

  it("recognises Notion's unsigned verification request only when the token is the sole key", () => {
    const handshake = findHandshake(webhookOf('notion'), request('{"verification_token":"secret_abc"}'));
    expect(handshake).toMatchObject({ verify_signature: false, forward: true });
    expect(
      findHandshake(webhookOf('notion'), request('{"verification_token":"x","type":"page.created"}')),
    ).toBeUndefined();
  });
});

describe('routing lookups from the catalog', () => {
  const lookups = (provider: string, body: string, headers: Record<string, string> = {}) =>
    routingLookups(webhookOf(provider).routing ?? [], request(body, headers));

  it.each([
    [
      'highlevel',
      '{"type":"ContactCreate","locationId":"loc-1","companyId":"co-1"}',
      {},
      [
        { field: 'connection_config.locationId', value: 'loc-1' },
        { field: 'connection_config.companyId', value: 'co-1' },
      ],
    ],
    [
      'calendly',
      '{"event":"invitee.created","created_by":"https://api.calendly.com/users/U1"}',
      {},
      [{ field: 'connection_config.owner', value: 'https://api.calendly.com/users/U1' }],
    ],
    [
      'attio',
      '{"events":[{"event_type":"record.created","id":{"workspace_id":"ws-1"}},{"id":{"workspace_id":"ws-1"}}]}',
      {},
      [{ field: 'connection_config.workspace_id', value: 'ws-1' }],
    ],
    [
      'fathom',
      '{"recorded_by":{"email":"ana@acme.example"}}',
      {},
      [{ field: 'metadata.emailAddress', value: 'ana@acme.example' }],
    ],
    [
      'github-app',
      '{"action":"opened","installation":{"id":4242}}',
      {},
      [{ field: 'connection_config.installation_id', value: '4242' }],
    ],
    [
      'slack',
      '{"type":"event_callback","team_id":"T0001"}',
      {},
      [{ field: 'connection_config.team.id', value: 'T0001' }],
    ],
    [
      'slack',
      `payload=${encodeURIComponent('{"type":"block_actions","team":{"id":"T0002"}}')}`,
      { 'content-type': 'application/x-www-form-urlencoded' },
      [{ field: 'connection_config.team.id', value: 'T0002' }],
    ],
    [
      'hubspot',
      '[{"portalId":62515,"objectId":1},{"portalId":62515,"objectId":2},{"portalId":777,"objectId":3}]',
      {},
      [
        { field: 'connection_config.portalId', value: '62515' },
        { field: 'connection_config.portalId', value: '777' },
      ],
    ],
    [
      'stripe',
      '{"id":"evt_1","account":"acct_123"}',
      {},
      [{ field: 'connection_config.stripe_user_id', value: 'acct_123' }],
    ],
    [
      'linear',
      '{"organizationId":"org-9"}',
      {},
      [{ field: 'connection_config.organizationId', value: 'org-9' }],
    ],
    [
      'jira',
      '{"webhookEvent":"jira:issue_updated","user":{"accountId":"5b10a"}}',
      {},
      [{ field: 'connection_config.accountId', value: '5b10a' }],
    ],
    [
      'shopify',
      '{"id":1}',
      { 'x-shopify-shop-domain': 'acme-store.myshopify.com' },
      [{ field: 'connection_config.subdomain', value: 'acme-store' }],
    ],
    [
      'zendesk',
      '{"type":"zen:event-type:ticket.created"}',
      { 'x-zendesk-account-id': '123456' },
      // Only the metadata the customer's backend sets: Zendesk's account id is not known to come from the
      // provider at connect time, and a connection-config key could be typed on the connect page.
      [{ field: 'metadata.account_id', value: '123456' }],
    ],
    ['intercom', '{"app_id":"ab12cd"}', {}, [{ field: 'connection_config.appId', value: 'ab12cd' }]],
    ['notion', '{"workspace_id":"ws-7"}', {}, [{ field: 'connection_config.workspace_id', value: 'ws-7' }]],
  ])('%s: %s', (provider, body, headers, expected) => {
    expect(lookups(provider, body, headers)).toEqual(expected);
  });

  it('finds nothing to route by when the account id is absent (the webhook is then forwarded raw)', () => {
    expect(lookups('github-app', '{"zen":"Design for failure."}')).toEqual([]);
    expect(lookups('github', '{"zen":"Design for failure."}')).toEqual([]);
  });
});

describe('webhook types from the catalog (what syncs subscribe to)', () => {
  it.each([
    ['github', '{"action":"opened"}', { 'x-github-event': 'issues' }, ['issues']],
    ['linear', '{"type":"Issue","action":"create"}', {}, ['Issue']],
    [
      'hubspot',
      '[{"subscriptionType":"contact.creation"},{"subscriptionType":"deal.deletion"},{"subscriptionType":"contact.creation"}]',
      {},
      ['contact.creation', 'deal.deletion'],
    ],
    [
      'intercom',
      '{"type":"notification_event","topic":"conversation.user.created"}',
      {},
      ['conversation.user.created'],
    ],
    ['notion', '{"type":"page.content_updated","workspace_id":"ws-7"}', {}, ['page.content_updated']],
    ['stripe', '{"id":"evt_1","type":"invoice.paid"}', {}, ['invoice.paid']],
    ['shopify', '{"id":1}', { 'x-shopify-topic': 'orders/create' }, ['orders/create']],
    ['jira', '{"webhookEvent":"jira:issue_updated"}', {}, ['jira:issue_updated']],
    ['jira', '{"payload":{"webhookEvent":"jira:issue_created"}}', {}, ['jira:issue_created']],
    [
      'jira',
      '[{"payload":{"webhookEvent":"jira:issue_created"}},{"payload":{"webhookEvent":"comment_created"}}]',
      {},
      ['jira:issue_created', 'comment_created'],
    ],
    ['linear', '{"action":"create"}', {}, []],
  ])('%s: %s', (provider, body, headers, expected) => {
    expect(subscriptionTypesOf(webhookOf(provider), request(body, headers))).toEqual(expected);
  });
});

describe('parseBody nesting depth', () => {
  const deep = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);

  it('parses up to the depth asked, and refuses deeper before parsing, JSON fields of a form too', () => {
    expect(parseBody(Buffer.from(`{"a":${deep(63)}}`), 'application/json', 64)).toEqual({
      a: JSON.parse(deep(63)),
    });
    expect(() => parseBody(Buffer.from(`{"a":${deep(64)}}`), 'application/json', 64)).toThrow(
      WebhookBodyTooDeepError,
    );
    expect(() => parseBody(Buffer.from(deep(10_000)), 'text/plain')).toThrow(
      'The webhook body nests arrays or objects more than 64 levels deep',
    );
    const form = `payload=${encodeURIComponent(deep(100))}&token=t`;
    expect(() => parseBody(Buffer.from(form), 'application/x-www-form-urlencoded')).toThrow(
      WebhookBodyTooDeepError,
    );
  });
});
