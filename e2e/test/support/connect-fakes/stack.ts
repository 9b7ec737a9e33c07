import { generateKeyPairSync } from 'node:crypto';
import { freePort, startStack, type Stack, type StackOptions, type StackService } from '@switchboard/testing';
import { call } from '../http';
import { writeProvidersFile } from '../providers-file';
import type { ConnectFakeProvider } from './provider';
import { connectProvidersYaml } from './providers-yaml';

/**
 * What connect flows touch: the API, auth-connect (integrations, the connect UI, the exchanges with the
 * provider), the vault (credentials), the orchestrator (asked for a validate-connection script) and the
 * relay (the auth webhooks). Not the proxy service (the gateway runs the proxy engine itself) nor the
 * functions runtime (no script is deployed).
 */
export const CONNECT_SERVICES: readonly StackService[] = [
  'gateway',
  'auth-connect',
  'connections-vault',
  'sync-orchestrator',
  'webhook-relay',
];

/**
 * A stack whose providers are the fake's (trusting its certificate) and whose auth-connect serves the
 * connect UI on a port of its own, at `connectUrl`; `allowedOrigins` may frame the page or hear from it.
 * `serviceEnv` adds variables of other services. Only the services of a connect flow are started (see
 * `CONNECT_SERVICES`) unless `services` says otherwise.
 */
export async function startConnectStack(
  fake: ConnectFakeProvider,
  options: {
    allowedOrigins?: string;
    readyTimeoutMs?: number;
    serviceEnv?: StackOptions['serviceEnv'];
    services?: readonly StackService[];
  } = {},
): Promise<{ stack: Stack; connectUrl: string }> {
  const connectPort = await freePort();
  const connectUrl = `http://127.0.0.1:${connectPort}`;
  const stack = await startStack({
    services: options.services ?? CONNECT_SERVICES,
    env: {
      SWITCHBOARD_PROVIDERS_FILE: writeProvidersFile(connectProvidersYaml(fake.url)),
      NODE_EXTRA_CA_CERTS: fake.caFile,
      SWITCHBOARD_CONNECT_URL: connectUrl,
      ...(options.allowedOrigins !== undefined
        ? { SWITCHBOARD_CONNECT_ALLOWED_ORIGINS: options.allowedOrigins }
        : {}),
    },
    serviceEnv: {
      ...options.serviceEnv,
      'auth-connect': { CONNECT_PORT: String(connectPort), CONNECT_HOST: '127.0.0.1' },
    },
    ...(options.readyTimeoutMs !== undefined ? { readyTimeoutMs: options.readyTimeoutMs } : {}),
  });
  return { stack, connectUrl };
}

/** The OAuth client of the fake's `fake-oauth` provider, as an integration's credentials. */
export const fakeOAuthCredentials = (fake: ConnectFakeProvider, scopes: string) => ({
  type: 'OAUTH2' as const,
  client_id: fake.clientId,
  client_secret: fake.clientSecret,
  scopes,
});

/** The key pair of the fake's GitHub-style app (RS256: the private key signs the app's JWTs). */
export const appKeyPair = () =>
  generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
  });

/**
 * Creates the `fake-app` integration (APP, with the app's OAuth client, which turns the user code of an
 * install into the token that checks it) and sends the fake's app installs back to the gateway.
 */
export async function createFakeAppIntegration(
  stack: { gatewayUrl: string; secretKey: string },
  fake: ConnectFakeProvider,
  uniqueKey: string,
  appKeys: { publicKey: string; privateKey: string },
): Promise<void> {
  // Raw HTTP: @nangohq/node's types do not know an APP integration's optional OAuth client.
  const created = await call(stack.gatewayUrl, 'POST', '/integrations', {
    key: stack.secretKey,
    body: {
      provider: 'fake-app',
      unique_key: uniqueKey,
      credentials: {
        type: 'APP',
        app_id: '99',
        app_link: `${fake.url}/apps/test-app`,
        private_key: appKeys.privateKey,
        client_id: fake.clientId,
        client_secret: fake.clientSecret,
      },
    },
  });
  expect(created.status).toBe(200);
  fake.setAppSetupUrl(`${stack.gatewayUrl}/app-auth/connect`, appKeys.publicKey);
}
