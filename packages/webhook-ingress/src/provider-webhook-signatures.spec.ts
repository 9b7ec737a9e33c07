import { createHash } from 'node:crypto';
import { verifySignature } from './provider-webhook';
import { hmac, request, webhookOf } from './provider-webhook.fixture';

/** The catalog's HMAC and hash signature recipes, provider by provider, with their timestamp tolerances. */

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
