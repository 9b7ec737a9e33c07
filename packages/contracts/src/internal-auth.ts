import { z } from 'zod';
import { callerSchema } from './context';
import { endUserSchema } from './events';
import { natsRequest } from './nats-request';

/**
 * Service-to-service contracts around connections. Public API shapes live with each area's own file;
 * these are the seams between auth-connect, connections-vault, proxy and webhook-relay.
 */

/** A connection's credentials, in Nango's shapes (discriminated by `type`: OAUTH2, OAUTH1, API_KEY, BASIC, ...). */
export const credentialsSchema = z.looseObject({ type: z.string() });
export type Credentials = z.infer<typeof credentialsSchema>;

export const VAULT_SUBJECTS = {
  /**
   * auth-connect → vault: a flow finished; validate the credentials with the integration's scripts,
   * then create or override the connection and publish the auth event.
   */
  store: 'vault.v1.connection.store',
  /** proxy / relay / functions → vault: a connection's credentials, refreshed first when they expire soon. */
  credentials: 'vault.v1.connection.credentials',
  /** webhook-relay → vault: connections whose config or metadata field equals a value (webhook routing). */
  match: 'vault.v1.connections.match',
  /**
   * vault → everyone (core NATS broadcast, no reply, may be missed): connections of an integration were
   * created, changed or deleted. Lets other services drop what they cached about them before its TTL.
   */
  changed: 'vault.v1.connections.changed',
} as const;

export const connectionsChangedSchema = z.object({
  environmentId: z.number().int(),
  providerConfigKey: z.string(),
});
export type ConnectionsChanged = z.infer<typeof connectionsChangedSchema>;

export const storeConnectionRequestSchema = z.object({
  environmentId: z.number().int(),
  providerConfigKey: z.string(),
  provider: z.string(),
  connectionId: z.string().min(1).max(255),
  credentials: credentialsSchema,
  connectionConfig: z.record(z.string(), z.unknown()).default({}),
  metadata: z.record(z.string(), z.unknown()).nullable().optional(),
  tags: z.record(z.string(), z.string()).default({}),
  endUser: endUserSchema.nullable().default(null),
  /** undefined = keep the current value; null = clear it. */
  webhookUrlOverride: z.string().nullable().optional(),
  operation: z.enum(['creation', 'override']),
  /**
   * The environment whose validate-connection scripts judge the credentials before they are stored.
   * Optional only so that an auth-connect that still validates on its own keeps working during a rolling
   * deploy (its requests are stored as they come); every current caller sends it.
   */
  caller: callerSchema.optional(),
});
export type StoreConnectionRequest = z.infer<typeof storeConnectionRequestSchema>;
export const storedConnectionSchema = z.object({
  id: z.number().int(),
  connectionId: z.string(),
  providerConfigKey: z.string(),
  operation: z.enum(['creation', 'override']),
});
export type StoredConnection = z.infer<typeof storedConnectionSchema>;

export const connectionCredentialsRequestSchema = z.object({
  environmentId: z.number().int(),
  providerConfigKey: z.string(),
  connectionId: z.string(),
  forceRefresh: z.boolean().default(false),
});
export const connectionCredentialsSchema = z.object({
  connectionId: z.string(),
  providerConfigKey: z.string(),
  provider: z.string(),
  credentials: credentialsSchema,
  connectionConfig: z.record(z.string(), z.unknown()),
  metadata: z.record(z.string(), z.unknown()).nullable(),
});
export type ConnectionCredentials = z.infer<typeof connectionCredentialsSchema>;

export const matchConnectionsRequestSchema = z.object({
  environmentId: z.number().int(),
  providerConfigKey: z.string(),
  /** e.g. `connection_config.installation_id`, `metadata.team_id`, or `connection_id`. */
  field: z.string().regex(/^(connection_id|connection_config\.[\w.-]+|metadata\.[\w.-]+)$/),
  value: z.string(),
});
export const matchedConnectionSchema = z.object({
  connectionId: z.string(),
  webhookUrlOverride: z.string().nullable(),
  tags: z.record(z.string(), z.string()),
  endUser: endUserSchema.nullable(),
});

export const AUTH_INTERNAL_SUBJECTS = {
  /** vault → auth-connect: perform the provider token refresh for a connection (the vault serialises calls). */
  refresh: 'auth.v1.token.refresh',
  /** proxy / relay / vault → auth-connect: an integration with its decrypted client credentials and provider entry. */
  resolveIntegration: 'auth.v1.integration.resolve',
} as const;

export const refreshTokenRequestSchema = z.object({
  environmentId: z.number().int(),
  providerConfigKey: z.string(),
  connectionId: z.string(),
  credentials: credentialsSchema,
  connectionConfig: z.record(z.string(), z.unknown()).default({}),
});
export const refreshTokenResultSchema = z.object({
  credentials: credentialsSchema,
  /** Some providers return values (instance URL, ...) that belong in the connection config. */
  connectionConfig: z.record(z.string(), z.unknown()).optional(),
});
export type RefreshTokenResult = z.infer<typeof refreshTokenResultSchema>;

export const resolveIntegrationRequestSchema = z.object({
  environmentId: z.number().int(),
  uniqueKey: z.string(),
});
export const resolvedIntegrationSchema = z.object({
  uniqueKey: z.string(),
  provider: z.string(),
  /** The catalog entry (alias resolved), as ResolvedProvider from @switchboard/providers. */
  providerDefinition: z.looseObject({ name: z.string(), auth_mode: z.string() }),
  credentialsType: z.string().nullable(),
  clientId: z.string().nullable(),
  clientSecret: z.string().nullable(),
  scopes: z.string().nullable(),
  appId: z.string().nullable(),
  appLink: z.string().nullable(),
  privateKey: z.string().nullable(),
  webhookSecret: z.string().nullable(),
  /** Optional so a reply from a version that never stored one still parses. */
  webhookPublicKey: z.string().nullable().optional(),
  integrationConfig: z.record(z.string(), z.unknown()).nullable(),
  forwardWebhooks: z.boolean(),
});
export type ResolvedIntegration = z.infer<typeof resolvedIntegrationSchema>;

/** The vault's service-to-service requests (connections-vault answers them). */
export const VAULT_REQUESTS = {
  store: natsRequest({
    subject: VAULT_SUBJECTS.store,
    request: storeConnectionRequestSchema,
    reply: storedConnectionSchema,
  }),
  credentials: natsRequest({
    subject: VAULT_SUBJECTS.credentials,
    request: connectionCredentialsRequestSchema,
    reply: connectionCredentialsSchema,
  }),
  match: natsRequest({
    subject: VAULT_SUBJECTS.match,
    request: matchConnectionsRequestSchema,
    reply: z.array(matchedConnectionSchema),
  }),
};

/** auth-connect's service-to-service requests. */
export const AUTH_INTERNAL_REQUESTS = {
  refresh: natsRequest({
    subject: AUTH_INTERNAL_SUBJECTS.refresh,
    request: refreshTokenRequestSchema,
    reply: refreshTokenResultSchema,
  }),
  resolveIntegration: natsRequest({
    subject: AUTH_INTERNAL_SUBJECTS.resolveIntegration,
    request: resolveIntegrationRequestSchema,
    reply: resolvedIntegrationSchema,
  }),
};
