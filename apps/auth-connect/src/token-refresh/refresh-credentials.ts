import type { ResolvedIntegration, RefreshTokenResult } from '@switchboard/contracts';
import type { ResolvedProvider } from '@switchboard/providers';
import { z } from 'zod';
import { AuthConnectError } from '../auth-connect.errors';
import type { CustomCredentials, OAuth2ClientCredentials, OAuth2Credentials } from '../exchanges/credentials';
import { clientCertificateFor } from '../exchanges/client-certificate';
import { ProviderExchangeError } from '../exchanges/exchange.errors';
import {
  billLogin,
  mintJwt,
  requestTwoStepToken,
  twoStepConnectionConfig,
  type CredentialFields,
} from '../exchanges/form-tokens';
import { fetchInstallationToken, refreshGithubAppOAuth } from '../exchanges/github-app.client';
import {
  refreshOAuth2Token,
  requestClientCredentialsToken,
  type OAuth2Client,
} from '../exchanges/oauth2-token.client';
import type { ConnectionConfig } from '../exchanges/templates';

/** What a refresh needs to know about the integration: its client credentials and app key. */
export type RefreshIntegration = Pick<
  ResolvedIntegration,
  'uniqueKey' | 'clientId' | 'clientSecret' | 'appId' | 'privateKey'
>;

export interface RefreshCredentialsInput {
  provider: ResolvedProvider;
  integration: RefreshIntegration;
  credentials: { type: string } & Record<string, unknown>;
  connectionConfig: ConnectionConfig;
  timeoutMs?: number;
}

/** Modes whose credentials never change by themselves: nothing to call, the stored ones are returned. */
// SIGNATURE: the proxy computes a new digest per request from the stored username and password.
const STATIC_MODES = new Set(['API_KEY', 'BASIC', 'OAUTH1', 'TBA', 'NONE', 'SIGNATURE']);
/** What JWT and TWO_STEP credentials hold besides the end user's typed fields. */
const ISSUED_FIELDS = new Set(['type', 'token', 'expires_at', 'issued_at', 'raw', 'refresh_token']);
const billSchema = z.looseObject({
  type: z.literal('BILL'),
  username: z.string(),
  password: z.string(),
  organization_id: z.string(),
  dev_key: z.string(),
});

const configOverride = z
  .object({ client_id: z.string().optional(), client_secret: z.string().optional() })
  .optional();
const oauth2Schema = z.looseObject({
  type: z.literal('OAUTH2'),
  access_token: z.string(),
  refresh_token: z.string().optional(),
  expires_at: z.string().optional(),
  raw: z.record(z.string(), z.unknown()).default({}),
  config_override: configOverride,
});
const clientCredentialsSchema = z.looseObject({
  type: z.literal('OAUTH2_CC'),
  token: z.string(),
  client_id: z.string().default(''),
  client_secret: z.string().default(''),
  raw: z.record(z.string(), z.unknown()).default({}),
});
// The app part is re-issued from the installation, so only the user part is read (absent on an import).
const customSchema = z.looseObject({
  type: z.literal('CUSTOM'),
  user: z
    .looseObject({
      access_token: z.string(),
      refresh_token: z.string().optional(),
      expires_at: z.string().optional(),
      raw: z.record(z.string(), z.unknown()).default({}),
    })
    .optional(),
});

/**
 * Performs one provider refresh, by the stored credentials' type: OAUTH2 → refresh_token grant;
 * OAUTH2_CC → a new client-credentials token; APP → a new installation token; CUSTOM → both; JWT → a newly
 * signed JWT; TWO_STEP → the token call again; BILL → a new login. Stateless on
 * purpose: the vault decides when to refresh and makes sure only one runs per connection.
 * Every failure is `refresh_token_external_error` with a message free of secrets.
 */
export async function refreshCredentials(input: RefreshCredentialsInput): Promise<RefreshTokenResult> {
  const { provider, integration, credentials, connectionConfig } = input;
  if (STATIC_MODES.has(credentials.type)) return { credentials };
  const timeout = input.timeoutMs !== undefined ? { timeoutMs: input.timeoutMs } : {};
  try {
    switch (credentials.type) {
      case 'OAUTH2': {
        const current = parseStored(oauth2Schema, credentials, provider) as OAuth2Credentials;
        const override = current.config_override;
        const client =
          override?.client_id && override.client_secret
            ? { clientId: override.client_id, clientSecret: override.client_secret }
            : integrationClient(integration, provider);
        return withConfig(
          await refreshOAuth2Token({ provider, client, credentials: current, connectionConfig, ...timeout }),
        );
      }
      case 'OAUTH2_CC':
        return await renewClientCredentials(input, timeout);
      case 'APP': {
        return withConfig(
          await fetchInstallationToken({
            provider,
            ...githubApp(integration, provider),
            connectionConfig,
            ...timeout,
          }),
        );
      }
      case 'CUSTOM':
        return await refreshCustom(input, timeout);
      case 'JWT':
        return {
          credentials: await mintJwt(provider, typedFields(credentials), connectionConfig, 'refresh'),
        };
      case 'TWO_STEP': {
        const renewed = await requestTwoStepToken({
          provider,
          fields: typedFields(credentials),
          connectionConfig,
          stage: 'refresh',
          ...timeout,
        });
        return withConfig({
          credentials: renewed,
          connectionConfig: twoStepConnectionConfig(provider, renewed.raw),
        });
      }
      case 'BILL':
        return await renewBillSession(input, timeout);
      default:
        throw misconfigured(provider, `Switchboard cannot refresh ${credentials.type} credentials`);
    }
  } catch (error) {
    throw asRefreshFailure(error, provider);
  }
}

type Timeout = { timeoutMs?: number };

/** OAUTH2_CC: a new client-credentials token, with the end user's own client when they typed one. */
async function renewClientCredentials(
  input: RefreshCredentialsInput,
  timeout: Timeout,
): Promise<RefreshTokenResult> {
  const { provider, integration, credentials, connectionConfig } = input;
  const current = parseStored(clientCredentialsSchema, credentials, provider) as OAuth2ClientCredentials;
  // The end user typed their own client id and secret at connect time; the integration's are the fallback.
  const client =
    current.client_id && current.client_secret
      ? { clientId: current.client_id, clientSecret: current.client_secret }
      : integrationClient(integration, provider);
  const scopes = scopesOf(connectionConfig['oauth_scopes']);
  const clientCertificate = clientCertificateFor(provider, current);
  return withConfig(
    await requestClientCredentialsToken({
      provider,
      client,
      ...(clientCertificate ? { clientCertificate } : {}),
      connectionConfig,
      ...(scopes ? { scopes } : {}),
      ...timeout,
    }),
  );
}

/** CUSTOM: a new installation token, and the user token refreshed when there is one. */
async function refreshCustom(input: RefreshCredentialsInput, timeout: Timeout): Promise<RefreshTokenResult> {
  const { provider, integration, credentials, connectionConfig } = input;
  const current = parseStored(customSchema, credentials, provider) as Pick<CustomCredentials, 'user'>;
  const client = current.user?.refresh_token ? { client: integrationClient(integration, provider) } : {};
  return withConfig(
    await refreshGithubAppOAuth({
      provider,
      ...client,
      ...githubApp(integration, provider),
      credentials: current,
      connectionConfig,
      ...timeout,
    }),
  );
}

/** BILL: a new login with the stored username, password, organization and developer key. */
async function renewBillSession(
  input: RefreshCredentialsInput,
  timeout: Timeout,
): Promise<RefreshTokenResult> {
  const { provider, credentials } = input;
  const { username, password, organization_id, dev_key } = parseStored(billSchema, credentials, provider);
  return {
    credentials: await billLogin({
      provider,
      login: { username, password, organization_id, dev_key },
      stage: 'refresh',
      ...timeout,
    }),
  };
}

/** The fields the end user typed at connect time, stored beside the token they produced. */
function typedFields(credentials: Record<string, unknown>): CredentialFields {
  const out: CredentialFields = {};
  for (const [name, value] of Object.entries(credentials))
    if (!ISSUED_FIELDS.has(name) && typeof value === 'string') out[name] = value;
  return out;
}

function withConfig(result: {
  credentials: object;
  connectionConfig: Record<string, unknown>;
}): RefreshTokenResult {
  const credentials = result.credentials as RefreshTokenResult['credentials'];
  return Object.keys(result.connectionConfig).length > 0
    ? { credentials, connectionConfig: result.connectionConfig }
    : { credentials };
}

function parseStored<S extends z.ZodType>(
  schema: S,
  credentials: unknown,
  provider: ResolvedProvider,
): z.infer<S> {
  const parsed = schema.safeParse(credentials);
  if (!parsed.success) {
    // Only the paths: the values are secrets.
    const fields = [...new Set(parsed.error.issues.map((issue) => issue.path.join('.') || '(root)'))].join(
      ', ',
    );
    throw misconfigured(provider, `the stored credentials are incomplete (${fields})`);
  }
  return parsed.data;
}

function integrationClient(integration: RefreshIntegration, provider: ResolvedProvider): OAuth2Client {
  if (!integration.clientId || !integration.clientSecret) {
    throw misconfigured(provider, `integration "${integration.uniqueKey}" has no client id and secret`);
  }
  return { clientId: integration.clientId, clientSecret: integration.clientSecret };
}

function githubApp(
  integration: RefreshIntegration,
  provider: ResolvedProvider,
): { appId: string; privateKey: string } {
  if (!integration.appId || !integration.privateKey) {
    throw misconfigured(provider, `integration "${integration.uniqueKey}" has no app id and private key`);
  }
  return { appId: integration.appId, privateKey: integration.privateKey };
}

function scopesOf(value: unknown): string[] | undefined {
  if (Array.isArray(value)) return value.filter((s): s is string => typeof s === 'string' && s !== '');
  if (typeof value === 'string' && value !== '')
    return value
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  return undefined;
}

function misconfigured(provider: ResolvedProvider, reason: string): ProviderExchangeError {
  return new ProviderExchangeError(`${provider.name} token refresh failed: ${reason}`, {
    stage: 'refresh',
    failure: 'misconfigured',
    provider: provider.name,
  });
}

/** Whatever went wrong during a refresh (a template, an installation token call), the wire code is the refresh one. */
function asRefreshFailure(error: unknown, provider: ResolvedProvider): unknown {
  if (error instanceof ProviderExchangeError) {
    if (error.details.stage === 'refresh') return error;
    return new ProviderExchangeError(error.message, { ...error.details, stage: 'refresh' });
  }
  if (error instanceof AuthConnectError) {
    return new ProviderExchangeError(`${provider.name} token refresh failed: ${error.message}`, {
      stage: 'refresh',
      failure: 'misconfigured',
      provider: provider.name,
    });
  }
  return error;
}
