import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Stack } from '@switchboard/testing';
import { call, type ApiResponse } from './http';
import { startProxyEngineStack, type FakeProvider } from './proxy-fakes';

/**
 * The stack, integrations and connections of the proxy policy suite, the listeners that must never be
 * reached, and the check that no credential leaves for a server the caller controls.
 */

export const HEADERS_TIMEOUT_MS = 1500;
/**
 * How much later than planned a loaded two-core machine may see a request answered: bounds on elapsed time
 * tell the behaviour apart (the configured timeout against the default minute, no wait against a wait of
 * seconds) with this margin, not by a tight timing.
 */
export const BUSY_MACHINE_LATE_MS = 8_000;
/** The engine's settings, for the gateway (it runs the engine: embedded mode, the default) and the proxy service. */
const ENGINE_ENV = {
  SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1',
  SWITCHBOARD_PROXY_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
  SWITCHBOARD_PROXY_RETRY_BASE_MS: '20',
  SWITCHBOARD_PROXY_RATE_LIMIT_MAX_WAIT_MS: '5000',
};

export interface Echo {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string;
}

export type Canary = Awaited<ReturnType<typeof canary>>;

/** A listener on a loopback address outside the allow-list: it must never see a connection. */
export async function canary(host: string): Promise<{ port: number; hits: number; close(): Promise<void> }> {
  let hits = 0;
  const server: Server = createServer((_req, res) => res.end('leaked'));
  server.on('connection', () => hits++);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    port: (server.address() as AddressInfo).port,
    get hits() {
      return hits;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The stack with the proxy providers and the engine settings, in the gateway and the proxy service. */
export function startProxyPolicyStack(): Promise<Stack> {
  return startProxyEngineStack(ENGINE_ENV);
}

/** The 200 of the fake provider's echo route, as the body it echoed. */
export const echo = (res: ApiResponse) => {
  expect(res.status).toBe(200);
  return res.body as Echo;
};

export async function createIntegration(
  stack: Stack,
  provider: string,
  uniqueKey: string,
  extra: Record<string, unknown> = {},
): Promise<void> {
  const res = await call(stack.gatewayUrl, 'POST', '/integrations', {
    key: stack.secretKey,
    body: { provider, unique_key: uniqueKey, ...extra },
  });
  expect(res.status).toBe(200);
}

/** Imports a connection whose origin is the fake provider at `origin`. */
export async function importConnection(
  stack: Stack,
  origin: string,
  providerConfigKey: string,
  connectionId: string,
  credentials: Record<string, unknown>,
  config: Record<string, unknown> = {},
): Promise<void> {
  const res = await call(stack.gatewayUrl, 'POST', '/connections', {
    key: stack.secretKey,
    body: {
      provider_config_key: providerConfigKey,
      connection_id: connectionId,
      credentials,
      connection_config: { origin, ...config },
    },
  });
  expect([200, 201]).toContain(res.status);
}

/** One integration of each auth mode the suite proxies for (and the `secret-header` connection). */
export async function createProxyIntegrations(stack: Stack, origin: string): Promise<void> {
  const integration = (provider: string, uniqueKey: string, extra: Record<string, unknown> = {}) =>
    createIntegration(stack, provider, uniqueKey, extra);
  const oauth = { type: 'OAUTH2', client_id: 'cid', client_secret: 'csecret' };
  await integration('fake-oauth2', 'oauth2', { credentials: oauth });
  await integration('fake-oauth2', 'oauth2-ungoverned', {
    credentials: oauth,
    integration_config: { proxy_rate_limit_governance: false },
  });
  await integration('fake-api-key', 'api-key');
  await integration('fake-api-key-query', 'api-key-query');
  await integration('fake-api-key-body', 'api-key-body');
  await integration('fake-basic', 'basic');
  await integration('fake-oauth1', 'oauth1', {
    credentials: { type: 'OAUTH1', client_id: 'consumer-key', client_secret: 'oauth1-consumer-secret' },
  });
  await integration('fake-tba', 'tba');
  await integration('fake-no-base', 'no-base');
  await integration('fake-client-secret-header', 'secret-header', {
    credentials: { type: 'OAUTH2', client_id: 'cid', client_secret: 'client-secret-etsy' },
  });
  await importConnection(stack, origin, 'secret-header', 'c1', {
    type: 'OAUTH2',
    access_token: 'at-secret-header',
  });
}

/** The `c1` connection of every other integration, and the `expired` OAuth 2 one. */
export async function createProxyConnections(stack: Stack, origin: string): Promise<void> {
  const connection = (
    providerConfigKey: string,
    connectionId: string,
    credentials: Record<string, unknown>,
    config: Record<string, unknown> = {},
  ) => importConnection(stack, origin, providerConfigKey, connectionId, credentials, config);
  await connection('oauth2', 'c1', { type: 'OAUTH2', access_token: 'at-1', refresh_token: 'rt-0' });
  await connection('oauth2-ungoverned', 'c1', { type: 'OAUTH2', access_token: 'at-1' });
  await connection('oauth2', 'expired', {
    type: 'OAUTH2',
    access_token: 'at-old',
    refresh_token: 'rt-old',
    expires_at: new Date(Date.now() - 60_000).toISOString(),
  });
  await connection('api-key', 'c1', { type: 'API_KEY', apiKey: 'key-header' }, { account: 'acme' });
  await connection('api-key-query', 'c1', { type: 'API_KEY', apiKey: 'key query&=' });
  await connection('api-key-body', 'c1', { type: 'API_KEY', apiKey: 'key-body' });
  await connection('basic', 'c1', { type: 'BASIC', username: 'ada', password: 'l0velace:' });
  await connection('oauth1', 'c1', {
    type: 'OAUTH1',
    oauth_token: 'token-1',
    oauth_token_secret: 'oauth1-token-secret',
  });
  await connection(
    'tba',
    'c1',
    {
      type: 'TBA',
      token_id: 'tid',
      token_secret: 'oauth1-token-secret',
      config_override: { client_id: 'ck', client_secret: 'oauth1-consumer-secret' },
    },
    { accountId: '1234-sb1' },
  );
  await connection('no-base', 'c1', { type: 'API_KEY', apiKey: 'k' });
}

/**
 * Sends a request of each credentialed integration (as `send` makes it) that lands on the `foreign`
 * server: none carries a token, key, client secret or password (nor the integration's `secrets`).
 */
export async function expectNoCredentialAbroad(
  foreign: FakeProvider,
  send: (providerConfigKey: string) => Promise<ApiResponse>,
  secrets: string[],
): Promise<void> {
  const before = foreign.seen.length;
  const integrations = ['secret-header', 'oauth2', 'api-key', 'api-key-query', 'basic', 'oauth1'];
  for (const providerConfigKey of integrations) {
    const seen = echo(await send(providerConfigKey));
    expect(seen.headers.authorization).toBeUndefined();
    expect(seen.headers['x-api-key']).toBeUndefined();
    expect(seen.url).toBe('/echo');
    const everything = JSON.stringify(seen);
    for (const secret of [
      'client-secret-etsy',
      'at-secret-header',
      'at-1',
      'key-header',
      'l0velace',
      ...secrets,
    ])
      expect(everything).not.toContain(secret);
  }
  expect(foreign.seen.length).toBe(before + integrations.length);
}
