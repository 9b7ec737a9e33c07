import { createHash, createHmac } from 'node:crypto';
import type { ConnectionCredentials, ResolvedIntegration } from '@switchboard/contracts';
import { planAuth, type ProviderProxySettings } from './auth-injection';

const integration = (over: Partial<ResolvedIntegration> = {}): ResolvedIntegration => ({
  uniqueKey: 'k',
  provider: 'p',
  providerDefinition: { name: 'p', auth_mode: 'OAUTH2' },
  credentialsType: null,
  clientId: 'ck',
  clientSecret: 'cs',
  scopes: null,
  appId: null,
  appLink: null,
  privateKey: null,
  webhookSecret: null,
  integrationConfig: null,
  forwardWebhooks: false,
  ...over,
});
const connection = (
  credentials: Record<string, unknown>,
  connectionConfig: Record<string, unknown> = {},
): ConnectionCredentials => ({
  connectionId: 'c',
  providerConfigKey: 'k',
  provider: 'p',
  credentials: credentials as ConnectionCredentials['credentials'],
  connectionConfig,
  metadata: null,
});

const rfc3986 = (s: string) =>
  encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** An independent RFC 5849 §3.4 check of an `Authorization: OAuth ...` header. */
function verifyOAuth1(
  header: string,
  method: string,
  url: string,
  form: Record<string, string>,
  consumerSecret: string,
  tokenSecret: string,
  algo: 'sha1' | 'sha256',
) {
  const params = Object.fromEntries(
    [...header.replace(/^OAuth /, '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [
      m[1]!,
      decodeURIComponent(m[2]!),
    ]),
  );
  const { oauth_signature: signature, realm: _realm, ...oauth } = params;
  const u = new URL(url);
  const all: [string, string][] = [
    ...Object.entries(oauth),
    ...u.searchParams.entries(),
    ...Object.entries(form),
  ];
  const normalized = all
    .map(([k, v]) => [rfc3986(k), rfc3986(v)] as const)
    .sort((a, b) => (a[0] === b[0] ? (a[1] < b[1] ? -1 : 1) : a[0] < b[0] ? -1 : 1))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const base = [method.toUpperCase(), rfc3986(`${u.origin}${u.pathname}`), rfc3986(normalized)].join('&');
  const expected = createHmac(algo, `${rfc3986(consumerSecret)}&${rfc3986(tokenSecret)}`)
    .update(base)
    .digest('base64');
  return { valid: expected === signature, params };
}

describe('planAuth', () => {
  const provider = (over: Partial<ProviderProxySettings> = {}): ProviderProxySettings => ({
    auth_mode: 'OAUTH2',
    ...over,
  });

  it('sends OAuth 2 tokens as Bearer and marks them refreshable only with a refresh token', () => {
    const plan = planAuth(
      provider(),
      integration(),
      connection({ type: 'OAUTH2', access_token: 'at-1', refresh_token: 'rt' }),
    );
    expect(plan.headers).toEqual({ authorization: 'Bearer at-1' });
    expect(plan.refreshable).toBe(true);
    expect(
      planAuth(provider(), integration(), connection({ type: 'OAUTH2', access_token: 'at-1' })).refreshable,
    ).toBe(false);
    expect(
      planAuth(provider(), integration(), connection({ type: 'OAUTH2_CC', token: 'cc-1' })).headers,
    ).toEqual({ authorization: 'Bearer cc-1' });
  });

  it('sends basic auth as base64(user:password)', () => {
    const plan = planAuth(
      provider({ auth_mode: 'BASIC' }),
      integration(),
      connection({ type: 'BASIC', username: 'ü', password: 'p:w' }),
    );
    expect(plan.headers.authorization).toBe(`Basic ${Buffer.from('ü:p:w').toString('base64')}`);
  });

  it('places an API key where the provider template says: header, query or JSON body', () => {
    const p = provider({
      auth_mode: 'API_KEY',
      proxy: {
        base_url: 'https://x.example.com',
        headers: {
          'X-Api-Key': '${apiKey}',
          'X-Region': '${connectionConfig.region}',
          'X-Missing': '${connectionConfig.nope}',
        },
        query: { api_key: '${apiKey}' },
        body: { token: '${apiKey}' },
      },
    });
    const plan = planAuth(
      p,
      integration(),
      connection({ type: 'API_KEY', apiKey: 'key-9' }, { region: 'eu' }),
    );
    expect(plan.headers).toEqual({ 'x-api-key': 'key-9', 'x-region': 'eu' });
    expect(plan.query).toEqual([['api_key', 'key-9']]);
    expect(plan.bodyFields).toEqual({ token: 'key-9' });
  });

  it('lets TWO_STEP templates that use the token replace the default Bearer header', () => {
    const p = provider({
      auth_mode: 'TWO_STEP',
      proxy: { base_url: 'https://x.example.com', headers: { 'x-token': '${accessToken}' } },
    });
    expect(planAuth(p, integration(), connection({ type: 'TWO_STEP', token: 't2' })).headers).toEqual({
      'x-token': 't2',
    });
  });

  it('sends an OAuth 2 token only where a template places it (TikTok Ads’ Access-Token, a query parameter)', () => {
    const header = provider({
      proxy: { base_url: 'https://x.example.com', headers: { 'access-token': '${accessToken}' } },
    });
    expect(
      planAuth(header, integration(), connection({ type: 'OAUTH2', access_token: 'at-7' })).headers,
    ).toEqual({ 'access-token': 'at-7' });
    const query = provider({
      auth_mode: 'TWO_STEP',
      proxy: { base_url: 'https://x.example.com', query: { authToken: '${accessToken}' } },
    });
    const plan = planAuth(query, integration(), connection({ type: 'TWO_STEP', token: 't3' }));
    expect(plan.headers).toEqual({});
    expect(plan.query).toEqual([['authToken', 't3']]);
  });

  it('refuses stored values that would inject a second header', () => {
    const p = provider({
      auth_mode: 'API_KEY',
      proxy: { base_url: 'https://x.example.com', headers: { 'x-api-key': '${apiKey}' } },
    });
    expect(() =>
      planAuth(p, integration(), connection({ type: 'API_KEY', apiKey: 'a\r\nX-Evil: 1' })),
    ).toThrow(expect.objectContaining({ code: 'invalid_connection' }));
  });

  it('signs OAuth 1.0a requests over the URL query and form fields, freshly each time', () => {
    const plan = planAuth(
      provider({ auth_mode: 'OAUTH1' }),
      integration(),
      connection({ type: 'OAUTH1', oauth_token: 'tok', oauth_token_secret: 'ts' }),
    );
    const url = 'https://api.example.com/1.1/statuses?include_entities=true&q=a%20b';
    const header = plan.sign!('POST', url, { status: 'Hello Ladies + Gentlemen' });
    const check = verifyOAuth1(
      header,
      'POST',
      url,
      { status: 'Hello Ladies + Gentlemen' },
      'cs',
      'ts',
      'sha1',
    );
    expect(check.valid).toBe(true);
    expect(check.params).toMatchObject({
      oauth_consumer_key: 'ck',
      oauth_token: 'tok',
      oauth_signature_method: 'HMAC-SHA1',
      oauth_version: '1.0',
    });
    expect(plan.sign!('POST', url, { status: 'x' })).not.toBe(header);
  });

  it('signs NetSuite TBA with HMAC-SHA256 and the account as realm', () => {
    const plan = planAuth(
      provider({ auth_mode: 'TBA' }),
      integration({ clientId: null, clientSecret: null }),
      connection(
        {
          type: 'TBA',
          token_id: 'tid',
          token_secret: 'tsec',
          config_override: { client_id: 'ock', client_secret: 'ocs' },
        },
        { accountId: '1234-sb1' },
      ),
    );
    const url = 'https://1234-sb1.suitetalk.api.netsuite.com/services/rest/record/v1/customer?limit=5';
    const header = plan.sign!('GET', url, undefined);
    expect(header).toMatch(/^OAuth realm="1234_SB1", /);
    const check = verifyOAuth1(header, 'GET', url, {}, 'ocs', 'tsec', 'sha256');
    expect(check.valid).toBe(true);
    expect(check.params).toMatchObject({
      oauth_consumer_key: 'ock',
      oauth_token: 'tid',
      oauth_signature_method: 'HMAC-SHA256',
    });
  });

  it("needs the integration's client credentials for OAuth 1.0a", () => {
    expect(() =>
      planAuth(
        provider({ auth_mode: 'OAUTH1' }),
        integration({ clientSecret: null }),
        connection({ type: 'OAUTH1', oauth_token: 't', oauth_token_secret: 's' }),
      ),
    ).toThrow(expect.objectContaining({ code: 'invalid_connection' }));
  });
});

describe('token-issuing modes', () => {
  it('SIGNATURE: a new WSSE UsernameToken for every request sent, where the template puts the token', () => {
    const provider: ProviderProxySettings = {
      auth_mode: 'SIGNATURE',
      proxy: { headers: { 'x-wsse': '${accessToken}', accept: 'application/json' } },
    };
    const plan = planAuth(
      provider,
      integration(),
      connection({ type: 'SIGNATURE', username: 'acme001', password: 'pw-secret' }),
    );
    expect(plan.headers).toEqual({ accept: 'application/json' });
    const first = plan.perRequest!()['x-wsse']!;
    const second = plan.perRequest!()['x-wsse']!;
    expect(first).not.toBe(second);
    const match =
      /^UsernameToken Username="acme001", PasswordDigest="([^"]+)", Nonce="([0-9a-f]{32})", Created="([^"]+)"$/.exec(
        first,
      );
    expect(match).not.toBeNull();
    const [, digest, nonce, created] = match!;
    const sha1Hex = createHash('sha1').update(`${nonce}${created}pw-secret`).digest('hex');
    expect(digest).toBe(Buffer.from(sha1Hex).toString('base64'));
    expect(plan.refreshable).toBe(false);
  });

  it('BILL: nothing but the catalog templates, and a 401 is worth a new login', () => {
    const plan = planAuth(
      {
        auth_mode: 'BILL',
        proxy: { headers: { devKey: '${credentials.dev_key}', sessionId: '${credentials.session_id}' } },
      },
      integration(),
      connection({ type: 'BILL', dev_key: 'dk', session_id: 's1', password: 'p' }),
    );
    expect(plan.headers).toEqual({ devkey: 'dk', sessionid: 's1' });
    expect(plan.refreshable).toBe(true);
  });

  it('TWO_STEP: ${base64(a:b)} builds a Basic pair (Tripletex)', () => {
    const plan = planAuth(
      {
        auth_mode: 'TWO_STEP',
        proxy: { headers: { authorization: 'Basic ${base64(connectionConfig.company:accessToken)}' } },
      },
      integration(),
      connection({ type: 'TWO_STEP', token: 'tok' }, { company: '0' }),
    );
    expect(plan.headers).toEqual({ authorization: `Basic ${Buffer.from('0:tok').toString('base64')}` });
  });
});
