import { createHash } from 'node:crypto';
import type { Nango } from '@nangohq/node';
import type { Stack } from '@switchboard/testing';
import {
  createFakeAppIntegration,
  fakeOAuthCredentials,
  type appKeyPair,
  type ConnectFakeProvider,
} from './connect-fakes';
import { call, type CookieJar, expectError } from './http';

/**
 * Constants, fixtures and request builders of the connect sessions suite: the integrations it creates, the
 * session a viewer reads back, and the calls its error cases repeat.
 */

export const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
export const TOKEN = /^nango_connect_session_[0-9a-f]{64}$/;

/** The unique keys of the integrations the suite connects to, one run apart from any other. */
export function connectIntegrationKeys(run: string) {
  return {
    keyIntegration: `key-${run}`,
    oauthIntegration: `oauth-${run}`,
    basicIntegration: `basic-${run}`,
    otherIntegration: `other-${run}`,
    ccIntegration: `cc-${run}`,
    tbaIntegration: `tba-${run}`,
    appIntegration: `app-${run}`,
  };
}

export async function createConnectIntegrations(
  nango: Nango,
  stack: Stack,
  fake: ConnectFakeProvider,
  keys: ReturnType<typeof connectIntegrationKeys>,
  appKeys: ReturnType<typeof appKeyPair>,
): Promise<void> {
  await nango.createIntegration({ provider: 'fake-key', unique_key: keys.keyIntegration });
  await nango.createIntegration({ provider: 'fake-basic', unique_key: keys.basicIntegration });
  await nango.createIntegration({ provider: 'fake-key', unique_key: keys.otherIntegration });
  await nango.createIntegration({
    provider: 'fake-oauth',
    unique_key: keys.oauthIntegration,
    credentials: fakeOAuthCredentials(fake, 'read,write'),
  });
  await nango.createIntegration({ provider: 'fake-cc', unique_key: keys.ccIntegration });
  await nango.createIntegration({
    provider: 'netsuite-tba',
    unique_key: keys.tbaIntegration,
    credentials: { type: 'TBA', client_id: 'consumer-key', client_secret: 'consumer-secret' },
  });
  await createFakeAppIntegration(stack, fake, keys.appIntegration, appKeys);
}

/** The SHA-256 hex digest the gateway stores in place of a session token. */
export const tokenHash = (token: string) => createHash('sha256').update(token).digest('hex');

/** The connection id the OAuth callback page hands back to the opener. */
export const callbackConnectionId = (html: string) => /"connectionId":"([^"]+)"/.exec(html)?.[1];

/**
 * A session with every field a viewer reads back (end user, organization, allowed integrations, defaults
 * holding a preset client secret, overrides), and what GET /connect/session must answer for it.
 */
export function viewerSession(run: string, keyIntegration: string, oauthIntegration: string) {
  const endUser = {
    id: `viewer-${run}`,
    email: 'grace@example.com',
    display_name: 'Grace',
    tags: { plan: 'pro' },
  };
  const organization = { id: 'org-1', display_name: 'Org One' };
  const emptyOverride = {
    connection_config: { oauth_client_id_override: '', oauth_client_secret_override: '' },
  };
  const overrides = { [keyIntegration]: { docs_connect: 'https://docs.example.com/our-guide' } };
  return {
    body: {
      end_user: endUser,
      organization,
      allowed_integrations: [keyIntegration, oauthIntegration],
      integrations_config_defaults: {
        [oauthIntegration]: {
          connection_config: {
            tenant: 'acme',
            oauth_client_id_override: 'preset-id',
            oauth_client_secret_override: 'PRESET-SECRET',
          },
        },
        [keyIntegration]: emptyOverride,
      },
      overrides,
    },
    expected: {
      data: {
        endUser: { ...endUser, organization },
        connectUISettings: expect.objectContaining({ showWatermark: expect.any(Boolean) }),
        allowed_integrations: [keyIntegration, oauthIntegration],
        integrations_config_defaults: {
          [oauthIntegration]: {
            connection_config: { tenant: 'acme', oauth_client_id_override: 'preset-id' },
          },
          [keyIntegration]: emptyOverride,
        },
        overrides,
      },
    },
  };
}

/** GET `path` with `key` as the bearer, expecting the given 401 error code. */
export async function expectUnauthorized(
  gatewayUrl: string,
  path: string,
  key: string | undefined,
  code: string,
): Promise<void> {
  expectError(await call(gatewayUrl, 'GET', path, key === undefined ? {} : { key }), 401, code);
}

/** No service log holds any of `secrets`. */
export function expectNotLogged(stack: Stack, secrets: string[]): void {
  for (const service of Object.keys(stack.services) as (keyof Stack['services'])[]) {
    for (const secret of secrets) expect(stack.logs(service)).not.toContain(secret);
  }
}

/** Imports an API key connection with the secret key, outside any connect session. */
export const importKeyConnection = (stack: Stack, providerConfigKey: string, connectionId: string) =>
  call(stack.gatewayUrl, 'POST', '/connections', {
    key: stack.secretKey,
    body: {
      provider_config_key: providerConfigKey,
      connection_id: connectionId,
      credentials: { type: 'API_KEY', apiKey: 'imported' },
    },
  });

/** POST /connect/sessions with `body`, expecting an invalid_body error that names `path`. */
export async function expectInvalidSessionBody(
  stack: Stack,
  body: Record<string, unknown>,
  path: (string | number)[],
): Promise<void> {
  const error = expectError(
    await call(stack.gatewayUrl, 'POST', '/connect/sessions', { key: stack.secretKey, body }),
    400,
    'invalid_body',
  );
  expect(error.errors?.map((e) => e.path)).toContainEqual(path);
}

/** The browser's start of a redirect flow: GET /oauth/connect/<integration>, without following it. */
export const startConnect = (gatewayUrl: string, integration: string, token: string, query = '') =>
  fetch(`${gatewayUrl}/oauth/connect/${integration}?connect_session_token=${token}${query}`, {
    redirect: 'manual',
  });

/**
 * The OAuth 2 authorization code flow as the end user's browser runs it: the start keeps the flow's nonce
 * cookie in `browser`, and the fake provider auto-approves, its redirect going straight back to our
 * callback.
 */
export function oauthBrowser(
  stack: () => Stack,
  fake: () => ConnectFakeProvider,
  browser: CookieJar,
  integration: string,
) {
  return {
    startFlow: async (token: string, tenant = 'acme') => {
      const res = await startConnect(stack().gatewayUrl, integration, token, `&params%5Btenant%5D=${tenant}`);
      expect(res.status).toBe(302);
      browser.take(res);
      return new URL(res.headers.get('location')!);
    },
    approve: async (authorizeUrl: URL) => {
      const res = await fake().get(authorizeUrl);
      expect(res.status).toBe(302);
      return new URL(res.location!);
    },
  };
}

/** What `failure()` gives for a Node client call the gateway refused with invalid_body. */
export const invalidBodyFailure = (message?: unknown) => ({
  status: 400,
  data: {
    error: expect.objectContaining(
      message === undefined ? { code: 'invalid_body' } : { code: 'invalid_body', message },
    ),
  },
});

/**
 * An app installation as the end user's browser runs it, from the gateway's start to the callback page:
 * the install page, the setup URL callback, then the app's user authorization (PKCE, same state).
 * Answers the callback page's HTML.
 */
export async function installApp(
  stack: Stack,
  fake: ConnectFakeProvider,
  browser: CookieJar,
  integration: string,
  token: string,
): Promise<string> {
  const start = await startConnect(stack.gatewayUrl, integration, token);
  expect(start.status).toBe(302);
  browser.take(start);
  const install = new URL(start.headers.get('location')!);
  expect(install.origin + install.pathname).toBe(`${fake.url}/apps/test-app/installations/new`);
  const back = await fake.get(install);
  expect(back.status).toBe(302);
  const setup = new URL(back.location!);
  expect(setup.origin + setup.pathname).toBe(`${stack.gatewayUrl}/app-auth/connect`);
  // The installation back, the same browser goes on to the app's user authorization (PKCE, same state).
  const installed = await fetch(setup, { headers: browser.headers(), redirect: 'manual' });
  expect(installed.status).toBe(302);
  const authorize = new URL(installed.headers.get('location')!);
  expect(authorize.origin + authorize.pathname).toBe(`${fake.url}/gh/login/oauth/authorize`);
  expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
  expect(authorize.searchParams.get('state')).toBe(setup.searchParams.get('state'));
  const authorized = await fake.get(authorize);
  expect(authorized.status).toBe(302);
  const page = await fetch(authorized.location!, { headers: browser.headers() });
  const html = await page.text();
  expect(page.status).toBe(200);
  return html;
}

/** Session bodies POST /connect/sessions refuses, each with the path its invalid_body error names. */
export function invalidSessionBodies(
  keyIntegration: string,
): [Record<string, unknown>, (string | number)[]][] {
  const eleven = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, 'v']));
  return [
    [{ tags: eleven }, ['tags']],
    [{ tags: { '1bad': 'v' } }, ['tags', '1bad']],
    [{ tags: { Team: 'a', team: 'b' } }, ['tags', 'team']],
    [{ tags: { ok: 'x'.repeat(256) } }, ['tags', 'ok']],
    [{ allowed_integrations: [keyIntegration] }, ['end_user']],
    [{ end_user: { id: 'u', email: 'not-an-email' } }, ['end_user', 'email']],
    [{ tags: { a: 'b' }, webhook_url_override: 'ftp://example.com/hook' }, ['webhook_url_override']],
    [
      { tags: { a: 'b' }, overrides: { [keyIntegration]: { docs_connect: 'javascript:alert(1)' } } },
      ['overrides', keyIntegration, 'docs_connect'],
    ],
    [{ tags: { a: 'b' }, unknown_field: true }, ['unknown_field']],
  ];
}

/** The query of the provider's authorize URL for the fake OAuth integration (PKCE S256, its scopes). */
export const expectedAuthorizeQuery = (fake: ConnectFakeProvider, gatewayUrl: string) => ({
  response_type: 'code',
  client_id: fake.clientId,
  redirect_uri: `${gatewayUrl}/oauth/callback`,
  scope: 'read,write',
  prompt: 'consent',
  state: expect.stringMatching(/^[0-9a-f-]{36}$/),
  code_challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
  code_challenge_method: 'S256',
});

/** A session body naming integrations that do not exist in three places. */
export const unknownIntegrationsSession = (keyIntegration: string) => ({
  end_user: { id: 'u1' },
  allowed_integrations: [keyIntegration, 'nope-1'],
  integrations_config_defaults: { 'nope-2': { user_scopes: 'x' } },
  overrides: { 'nope-3': { docs_connect: 'https://docs.example.com/x' } },
});
