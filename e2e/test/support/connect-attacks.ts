import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { Nango } from '@nangohq/node';
import type { Stack } from '@switchboard/testing';
import { Client } from 'pg';
import {
  appKeyPair,
  createFakeAppIntegration,
  startConnectFakeProvider,
  startConnectStack,
  type ConnectFakeProvider,
  type GithubUser,
} from './connect-fakes';
import { call, CookieJar, createConnectSession, withSessionToken } from './http';
import { STACK_READY_TIMEOUT_MS } from './processes';
import { svixHeaders } from './webhook-events';
import { WebhookReceiver } from './webhook-receiver';

/**
 * The world of connect-security.e2e-spec.ts: a stack on the connect fakes (`fake` the provider, `attacker`
 * a second fake standing in for a server the end user controls), a webhook receiver, and the integrations
 * the attacks go through; with the browser drivers of the flows the end user can start.
 */
export class ConnectAttackWorld {
  stack!: Stack;
  nango!: Nango;
  db!: Client;
  fake!: ConnectFakeProvider;
  attacker!: ConnectFakeProvider;
  receiver!: WebhookReceiver;
  readonly appKeys = appKeyPair();

  /** The integrations the attacks go through, named for the run. */
  readonly integrations: Record<
    'oauth' | 'hosted' | 'key' | 'app' | 'custom' | 'routed' | 'keyRouted',
    string
  >;

  constructor(run: string) {
    this.integrations = {
      oauth: `oauth-${run}`,
      hosted: `hosted-${run}`,
      key: `key-${run}`,
      app: `app-${run}`,
      custom: `app-oauth-${run}`,
      routed: `routed-${run}`,
      keyRouted: `key-routed-${run}`,
    };
  }

  /** Starts the fakes, the receiver and the stack, and creates the integrations but the routed ones. */
  async start(): Promise<this> {
    this.fake = await startConnectFakeProvider();
    this.attacker = await startConnectFakeProvider();
    this.receiver = await new WebhookReceiver().start();
    ({ stack: this.stack } = await startConnectStack(this.fake, {
      serviceEnv: {
        'webhook-relay': {
          SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1',
          SWITCHBOARD_WEBHOOK_RETRY_SCHEDULE: '0,300ms,600ms',
          SWITCHBOARD_WEBHOOK_POLL_INTERVAL: '100ms',
        },
      },
      readyTimeoutMs: STACK_READY_TIMEOUT_MS,
    }));
    this.nango = new Nango({ secretKey: this.stack.secretKey, host: this.stack.gatewayUrl });
    this.db = new Client({ connectionString: this.stack.databaseUrl });
    await this.db.connect();
    const { fake, nango, integrations } = this;
    const oauthCredentials = {
      type: 'OAUTH2' as const,
      client_id: fake.clientId,
      client_secret: fake.clientSecret,
      scopes: 'read',
    };
    await nango.createIntegration({
      provider: 'fake-oauth',
      unique_key: integrations.oauth,
      credentials: oauthCredentials,
    });
    await nango.createIntegration({
      provider: 'fake-hosted',
      unique_key: integrations.hosted,
      credentials: oauthCredentials,
    });
    await nango.createIntegration({ provider: 'fake-key', unique_key: integrations.key });
    await createFakeAppIntegration(this.stack, fake, integrations.app, this.appKeys);
    await nango.createIntegration({
      provider: 'fake-app-oauth',
      unique_key: integrations.custom,
      credentials: {
        type: 'CUSTOM',
        client_id: fake.clientId,
        client_secret: fake.clientSecret,
        app_id: '99',
        app_link: `${fake.url}/apps/test-app`,
        private_key: this.appKeys.privateKey,
      },
    } as Parameters<Nango['createIntegration']>[0]);
    return this;
  }

  async stop(): Promise<void> {
    await this.db?.end();
    await this.stack?.stop();
    await this.fake?.stop();
    await this.attacker?.stop();
    await this.receiver?.stop();
  }

  /** A connect session token for `body`. */
  session = (body: Record<string, unknown>) =>
    createConnectSession(this.stack.gatewayUrl, this.stack.secretKey, body);

  /** How many connections the vault holds for an integration. */
  connectionCount = async (providerConfigKey: string) =>
    Number(
      (
        await this.db.query(
          'SELECT count(*)::int AS n FROM vault.connections WHERE provider_config_key = $1',
          [providerConfigKey],
        )
      ).rows[0].n,
    );

  /** The attacker's server as a host name, as an end user would type it. */
  attackerHost = () => this.attacker.url.replace(/^https:\/\//, '');

  /** What the receiver got that carries `marker`. */
  deliveredWith = (marker: string) => this.receiver.received.filter((r) => r.body.includes(marker));

  /** The forwards of the environment's webhooks the receiver got for a connection. */
  forwardsTo = (connectionId: string) =>
    this.receiver.received.filter((r) => {
      const body = JSON.parse(r.body) as { type?: string; connectionId?: string };
      return body.type === 'forward' && body.connectionId === connectionId;
    });

  /**
   * An OAuth flow of `integration` started from its popup URL in a fresh browser for `endUserId`, approved at
   * the fake provider, and its callback opened in that browser: the callback page.
   */
  async oauthRoundTrip(integration: string, endUserId: string): Promise<Response> {
    const browser = new CookieJar();
    const token = await this.session({ end_user: { id: endUserId } });
    const start = await fetch(
      `${this.stack.gatewayUrl}${withSessionToken(`/oauth/connect/${integration}`, token)}`,
      { redirect: 'manual' },
    );
    expect(start.status).toBe(302);
    browser.take(start);
    const back = await this.fake.get(new URL(start.headers.get('location')!));
    return fetch(back.location!, { headers: browser.headers() });
  }

  /** Raw HTTP: @nangohq/node's types know neither an APP integration's OAuth client nor an API key's webhook secret. */
  createIntegration = async (body: Record<string, unknown>) => {
    const created = await call(this.stack.gatewayUrl, 'POST', '/integrations', {
      key: this.stack.secretKey,
      body,
    });
    expect(created.status).toBe(200);
  };
}

/** The browser of an OAuth flow of `integration` started from the popup URL, and the fake provider's approval. */
export function oauthBrowser(world: ConnectAttackWorld, integration: string) {
  const start = async (token: string, jar: CookieJar) => {
    const res = await fetch(
      `${world.stack.gatewayUrl}${withSessionToken(`/oauth/connect/${integration}?params%5Btenant%5D=acme`, token)}`,
      { redirect: 'manual' },
    );
    expect(res.status).toBe(302);
    jar.take(res);
    return { res, authorizeUrl: new URL(res.headers.get('location')!) };
  };
  const atProvider = async (authorizeUrl: URL) => {
    const res = await world.fake.get(authorizeUrl);
    expect(res.status).toBe(302);
    return new URL(res.location!);
  };
  return { start, atProvider };
}

/** The browser of a GitHub App install flow at the fake GitHub, for the APP integration unless told another. */
export function githubAppBrowser(world: ConnectAttackWorld) {
  /** An APP flow started in a fresh browser, installed at the fake GitHub by `user`: the setup URL sent back. */
  const install = async (
    endUserId: string,
    user: GithubUser = 'acme',
    integration = world.integrations.app,
  ) => {
    const browser = new CookieJar();
    const token = await world.session({ end_user: { id: endUserId } });
    const start = await fetch(
      `${world.stack.gatewayUrl}${withSessionToken(`/oauth/connect/${integration}`, token)}`,
      {
        redirect: 'manual',
      },
    );
    expect(start.status).toBe(302);
    browser.take(start);
    world.fake.actAs(user);
    const back = await world.fake
      .get(new URL(start.headers.get('location')!))
      .finally(() => world.fake.actAs('acme'));
    expect(back.status).toBe(302);
    const setup = new URL(back.location!);
    expect(setup.searchParams.get('code')).toMatch(/^ghcode_/);
    return { browser, setup };
  };
  /** The rest of the flow in `browser`: the setup URL, the user authorization as `user`, the result page. */
  const complete = async (
    browser: CookieJar,
    setup: URL,
    user: GithubUser = 'acme',
    tamper: (callback: URL) => void = () => undefined,
  ) => {
    const installed = await fetch(setup, { headers: browser.headers(), redirect: 'manual' });
    if (installed.status !== 302) return installed;
    world.fake.actAs(user);
    const authorized = await world.fake
      .get(installed.headers.get('location')!)
      .finally(() => world.fake.actAs('acme'));
    expect(authorized.status).toBe(302);
    const callback = new URL(authorized.location!);
    tamper(callback);
    return fetch(callback, { headers: browser.headers() });
  };
  return { install, complete };
}

/**
 * Every form a client secret can take in what a provider echoes back: raw, URL- and form-encoded (either
 * case of hex), JSON-escaped, base64 alone and in a Basic header, and cut short after nine characters.
 */
export function secretForms(secret: string, clientId: string) {
  const formEncode = (v: string) => new URLSearchParams({ x: v }).toString().slice(2);
  const lowerHex = (v: string) => v.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase());
  return [
    secret,
    encodeURIComponent(secret),
    formEncode(secret),
    lowerHex(encodeURIComponent(secret)),
    lowerHex(formEncode(secret)),
    JSON.stringify(secret).slice(1, -1),
    Buffer.from(secret).toString('base64'),
    Buffer.from(`${clientId}:${secret}`).toString('base64'),
    Buffer.from(`${formEncode(clientId)}:${formEncode(secret)}`).toString('base64'),
    // the echo cut short after nine characters of the secret
    secret.slice(0, 9),
    formEncode(secret.slice(0, 9)),
  ] as const;
}

/** Asserts `text` holds no form of the secret, nor the provider's raw answer (it echoes our request body). */
export function expectNoSecretIn(text: string, secret: string, clientId: string): void {
  for (const form of secretForms(secret, clientId))
    expect({ form, leaked: text.includes(form) }).toEqual({ form, leaked: false });
  // nor the provider's raw answer (it echoes our request body)
  expect(text).not.toContain('grant_type=');
  expect(text).not.toContain('client_secret');
}

/** The logs of every service that handles a connect flow or its webhooks, as one text. */
export const connectLogs = (stack: Stack) =>
  (['gateway', 'auth-connect', 'connections-vault', 'webhook-relay'] as const)
    .map((service) => stack.logs(service))
    .join('\n');

/**
 * The routed (webhook-keyed) integrations: `routed`, an OAuth provider whose token answer names the
 * tenant's portal, and `keyRouted`, an API-key provider whose post-connect call names the key's instance.
 * The end user's side: a connect of each completed in a browser; the provider's side: their signed
 * webhooks, which the environment forwards to the world's receiver.
 */
export function routedFlows(world: ConnectAttackWorld, run: string) {
  const { routed, keyRouted } = world.integrations;
  const routedSecret = 'routed-webhook-secret';
  const svixSecret = `whsec_${randomBytes(24).toString('base64')}`;
  /** Creates `routed` and sends the environment's webhooks to the receiver's `/primary`. */
  const createRouted = async () => {
    await world.createIntegration({
      provider: 'fake-routed',
      unique_key: routed,
      credentials: {
        type: 'OAUTH2',
        client_id: world.fake.clientId,
        client_secret: world.fake.clientSecret,
        webhook_secret: routedSecret,
      },
    });
    const settings = await call(world.stack.gatewayUrl, 'PATCH', '/environment', {
      key: world.stack.secretKey,
      body: { webhook_settings: { primary_url: `${world.receiver.url}/primary` } },
    });
    expect(settings.status).toBe(200);
  };
  const createKeyRouted = () =>
    world.createIntegration({
      provider: 'fake-key-routed',
      unique_key: keyRouted,
      credentials: { type: 'API_KEY', webhook_secret: svixSecret },
    });
  const connectRouted = async (
    tenant: string,
    extra: { params?: Record<string, string>; defaults?: unknown } = {},
  ) => {
    const browser = new CookieJar();
    const token = await world.session({
      end_user: { id: `routed-${tenant}-${run}` },
      ...(extra.defaults ? { integrations_config_defaults: { [routed]: extra.defaults } } : {}),
    });
    const started = await call(
      world.stack.gatewayUrl,
      'POST',
      withSessionToken(`/oauth/connect/${routed}`, token),
      {
        body: { params: { tenant, ...extra.params } },
      },
    );
    if (started.status !== 200) return { started, connectionId: undefined };
    const launch = await fetch((started.body as { url: string }).url, { redirect: 'manual' });
    browser.take(launch);
    const approved = await world.fake.get(new URL(launch.headers.get('location')!));
    const page = await fetch(new URL(approved.location!), { headers: browser.headers() });
    const html = await page.text();
    expect(page.status).toBe(200);
    return { started, connectionId: /"connectionId":"([^"]+)"/.exec(html)![1]! };
  };
  const providerWebhook = (body: unknown) => {
    const text = JSON.stringify(body);
    return fetch(`${world.stack.gatewayUrl}/webhook/${world.stack.environmentUuid}/${routed}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-fake-signature': createHmac('sha256', routedSecret).update(text).digest('hex'),
      },
      body: text,
    });
  };
  const connectKey = async (apiKey: string, params: Record<string, string> = {}) => {
    const token = await world.session({ end_user: { id: `key-routed-${randomUUID()}` } });
    // The page sends connection config as `params[k]=v` in the query.
    const query = Object.entries(params)
      .map(([k, v]) => `params%5B${encodeURIComponent(k)}%5D=${encodeURIComponent(v)}`)
      .join('&');
    const path = `/api-auth/api-key/${keyRouted}${query ? `?${query}` : ''}`;
    return call(world.stack.gatewayUrl, 'POST', withSessionToken(path, token), { body: { apiKey } });
  };
  /** Signed as Svix signs Clerk's webhooks. */
  const svixWebhook = (body: unknown) => {
    const text = JSON.stringify(body);
    return fetch(`${world.stack.gatewayUrl}/webhook/${world.stack.environmentUuid}/${keyRouted}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...svixHeaders(svixSecret, text) },
      body: text,
    });
  };
  return { createRouted, createKeyRouted, connectRouted, providerWebhook, connectKey, svixWebhook };
}

/** Waits up to 15 s for `done`, polling every 50 ms. */
export async function until(done: () => boolean): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
}
