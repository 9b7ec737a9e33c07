import {
  hostValueAllowed,
  originPlaceholders,
  originTemplates,
  type HostFieldsProviderShape,
} from '@switchboard/providers';
import { AuthConnectError } from '../auth-connect.errors';

/**
 * Provider URL and parameter templates refer to connection data as `${connectionConfig.name}`; a URL may
 * offer fallbacks with `A || B` (the first alternative whose placeholders are all known wins, e.g.
 * Salesforce's `${connectionConfig.hostname}/... || https://login.salesforce.com/...`).
 */

const PLACEHOLDER = /\$\{([^{}]*)\}/g;

export type ConnectionConfig = Record<string, unknown>;

function lookup(name: string, connectionConfig: ConnectionConfig): string | undefined {
  if (!name.startsWith('connectionConfig.')) return undefined;
  const value = connectionConfig[name.slice('connectionConfig.'.length)];
  if (typeof value === 'string') return value === '' ? undefined : value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}

/** The placeholders of a template that `connectionConfig` cannot fill, without the `connectionConfig.` prefix. */
export function missingPlaceholders(template: string, connectionConfig: ConnectionConfig): string[] {
  const missing: string[] = [];
  for (const match of template.matchAll(PLACEHOLDER)) {
    const name = match[1] ?? '';
    if (lookup(name, connectionConfig) === undefined) missing.push(name.replace(/^connectionConfig\./, ''));
  }
  return missing;
}

function fill(template: string, connectionConfig: ConnectionConfig): string {
  return template.replace(PLACEHOLDER, (_m, name: string) => lookup(name, connectionConfig) ?? '');
}

/** Fills a parameter value (no `||` handling: a parameter is a value, not a URL). */
export function interpolateValue(template: string, connectionConfig: ConnectionConfig): string {
  const missing = missingPlaceholders(template, connectionConfig);
  if (missing.length > 0) throw missingConfigError(missing);
  return fill(template, connectionConfig);
}

/**
 * Fills a URL template and checks that the result is an http(s) URL. Connection config may come from an
 * end user, so every value that lands in the URL's origin must pass its field's catalog pattern (pinned to
 * the provider's domains), whatever the template's shape, and must fill exactly the origin: a value such
 * as `evil.example/x?` cannot move the request elsewhere.
 */
export function interpolateUrl(
  template: string,
  connectionConfig: ConnectionConfig,
  provider: Pick<HostFieldsProviderShape, 'connection_config'>,
): URL {
  const alternatives = template.split('||').map((part) => part.trim());
  let firstMissing: string[] = [];
  for (const [index, alternative] of alternatives.entries()) {
    const missing = missingPlaceholders(alternative, connectionConfig);
    if (missing.length > 0) {
      if (index === 0) firstMissing = missing;
      continue;
    }
    return checkedUrl(alternative, connectionConfig, provider);
  }
  throw missingConfigError(firstMissing);
}

function checkedUrl(
  alternative: string,
  connectionConfig: ConnectionConfig,
  provider: Pick<HostFieldsProviderShape, 'connection_config'>,
): URL {
  for (const name of originPlaceholders(alternative)) {
    const value = lookup(`connectionConfig.${name}`, connectionConfig) ?? '';
    if (!hostValueAllowed(provider.connection_config?.[name], value)) {
      throw new AuthConnectError(
        'invalid_connection',
        `The connection config puts a host the provider does not use in its URL (${name})`,
        [
          {
            code: 'invalid_format',
            message: `${name} is not an allowed host`,
            path: ['connection_config', name],
          },
        ],
      );
    }
  }
  const filled = fill(alternative, connectionConfig);
  let url: URL;
  try {
    url = new URL(filled);
  } catch {
    throw new AuthConnectError(
      'invalid_connection',
      'The connection config does not make a valid provider URL',
    );
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new AuthConnectError(
      'invalid_connection',
      'The connection config does not make an http(s) provider URL',
    );
  }
  if (url.username || url.password) {
    throw new AuthConnectError('invalid_connection', 'A provider URL must not carry user information');
  }
  // The origin the template meant, filled, must be exactly the URL's origin: `${connectionConfig.subdomain}`
  // set to `evil.example/x?` or an instance URL with a path would otherwise move the request elsewhere.
  const originTemplate = originTemplates(alternative)[0] ?? '';
  if (originTemplate.includes('${') && expectedOrigin(originTemplate, connectionConfig) !== url.origin) {
    throw new AuthConnectError(
      'invalid_connection',
      'The connection config puts an invalid host in the provider URL',
    );
  }
  return url;
}

/**
 * The origin a template's origin part names once filled. A lone placeholder (`${connectionConfig.instance_url}`,
 * a GitHub App's public link) holds a whole URL whose origin counts; otherwise the filled text must be
 * nothing but a scheme, a host and a port.
 */
function expectedOrigin(originTemplate: string, connectionConfig: ConnectionConfig): string | undefined {
  const filled = fill(originTemplate, connectionConfig);
  if (/^\$\{[^{}]+\}$/.test(originTemplate)) {
    if (/[?#@\s\\]/.test(filled)) return undefined;
    try {
      const whole = new URL(filled);
      if (whole.username || whole.password || whole.search || whole.hash) return undefined;
      return whole.origin;
    } catch {
      return undefined;
    }
  }
  if (!/^https?:\/\/[A-Za-z0-9.-]+(?::\d{1,5})?$/i.test(filled)) return undefined;
  return new URL(filled).origin;
}

/** Fills every string value of a parameter map (provider `token_params`, `refresh_params`, ...). */
export function interpolateParams(
  params: Record<string, string | number | boolean> | undefined,
  connectionConfig: ConnectionConfig,
  /** Connection-config fields the catalog marks optional: a parameter built only from missing ones is left out (Auth0's organization). */
  optional: ReadonlySet<string> = new Set(),
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(params ?? {})) {
    if (typeof value !== 'string') {
      out[key] = String(value);
      continue;
    }
    const missing = missingPlaceholders(value, connectionConfig);
    if (missing.length > 0 && missing.every((name) => optional.has(name))) continue;
    out[key] = interpolateValue(value, connectionConfig);
  }
  return out;
}

/** The names of a provider's optional connection-config fields. */
export function optionalConfigFields(provider: {
  connection_config?: Record<string, { optional?: boolean | undefined }> | undefined;
}): Set<string> {
  return new Set(
    Object.entries(provider.connection_config ?? {})
      .filter(([, field]) => field.optional)
      .map(([name]) => name),
  );
}

function missingConfigError(missing: string[]): AuthConnectError {
  const names = [...new Set(missing)];
  return new AuthConnectError(
    'invalid_connection',
    `Missing connection config: ${names.join(', ')}`,
    names.map((name) => ({
      code: 'missing',
      message: `${name} is required`,
      path: ['connection_config', name],
    })),
  );
}
