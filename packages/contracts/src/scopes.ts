/**
 * API key scopes, `environment:<area>:<action>`. A key carries a subset; a route names the one scope it
 * needs and the gateway refuses (403 `forbidden`) when the key lacks it. There is no implicit hierarchy:
 * `write` does not imply `read`, and `read_credentials` does not imply `read`.
 */
export const SCOPES = {
  'environment:integrations:read': 'List and read integrations (without their secrets)',
  'environment:integrations:read_credentials':
    "Read an integration's OAuth client secret, private key and webhook secret",
  'environment:integrations:write': 'Create, update and delete integrations',
  'environment:providers:read': 'Read the provider catalog',
  'environment:connections:read': 'List and read connections and their metadata (without credentials)',
  'environment:connections:read_credentials': "Read a connection's credentials and force a token refresh",
  'environment:connections:write': 'Import, update and delete connections and their metadata',
  'environment:connect_sessions:write': 'Create connect sessions and reconnect sessions',
  'environment:proxy': "Call providers through the proxy with a connection's credentials",
  'environment:records:read': 'Read synced records',
  'environment:records:write': 'Prune synced records',
  'environment:syncs:read': 'Read sync status',
  'environment:syncs:update': 'Trigger, pause, start, re-schedule syncs and manage their variants',
  'environment:actions:trigger': 'Trigger actions and read async action results',
  'environment:functions:read': 'List deployed functions and read their code',
  'environment:functions:write': 'Deploy and delete functions',
  'environment:environment_variables:read': 'Read environment variables',
  'environment:environment_variables:write': 'Set environment variables',
  'environment:settings:read': 'Read environment settings (webhook URLs, toggles, signing key)',
  'environment:settings:write': 'Change environment settings and rotate the webhook signing key',
  'environment:webhooks:read': 'Read the webhook delivery log',
  'environment:webhooks:write': 'Redeliver webhooks',
  'environment:api_keys:write': 'Create and revoke API keys of the environment',
} as const;

export type Scope = keyof typeof SCOPES;
export const ALL_SCOPES = Object.keys(SCOPES) as Scope[];

export function isScope(value: string): value is Scope {
  return Object.prototype.hasOwnProperty.call(SCOPES, value);
}

/** The console's roles, from least to most able. */
export const CONSOLE_ROLES = ['viewer', 'developer', 'admin'] as const;
export type ConsoleRole = (typeof CONSOLE_ROLES)[number];

/** What a viewer may not read: secrets, and environment variables (which often hold them). */
const VIEWER_EXCLUDED: readonly Scope[] = [
  'environment:integrations:read_credentials',
  'environment:connections:read_credentials',
  'environment:environment_variables:read',
];

const VIEWER_SCOPES: Scope[] = ALL_SCOPES.filter(
  (scope) => scope.endsWith(':read') && !VIEWER_EXCLUDED.includes(scope),
);

const DEVELOPER_SCOPES: Scope[] = [
  ...VIEWER_SCOPES,
  'environment:integrations:write',
  'environment:connections:write',
  'environment:connect_sessions:write',
  'environment:syncs:update',
  'environment:actions:trigger',
  'environment:functions:write',
  'environment:records:write',
  'environment:webhooks:write',
  'environment:environment_variables:read',
  'environment:environment_variables:write',
  'environment:proxy',
];

/**
 * The scopes a console user's role grants in every environment of the account. An admin holds all of
 * them (credential reads, settings, API keys) and manages console users besides.
 */
export const CONSOLE_ROLE_SCOPES: Record<ConsoleRole, readonly Scope[]> = {
  viewer: VIEWER_SCOPES,
  developer: DEVELOPER_SCOPES,
  admin: ALL_SCOPES,
};
