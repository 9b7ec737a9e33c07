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
 * Fills a URL template and checks that the result is an http(s) URL. A value that would change the URL's
 * structure (a host such as `evil.example/x?`) is refused: connection config comes from end users.
 */
export function interpolateUrl(template: string, connectionConfig: ConnectionConfig): URL {
  const alternatives = template.split('||').map((part) => part.trim());
  let firstMissing: string[] = [];
  for (const [index, alternative] of alternatives.entries()) {
    const missing = missingPlaceholders(alternative, connectionConfig);
    if (missing.length > 0) {
      if (index === 0) firstMissing = missing;
      continue;
    }
    return checkedUrl(alternative, connectionConfig);
  }
  throw missingConfigError(firstMissing);
}

function checkedUrl(alternative: string, connectionConfig: ConnectionConfig): URL {
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
  // A placeholder inside the host must fill exactly the host: `${connectionConfig.subdomain}.zendesk.com`
  // with `evil.example/x?` would otherwise move the request elsewhere.
  const hostTemplate = /^[a-z]+:\/\/([^/?#]*)/i.exec(alternative)?.[1];
  if (hostTemplate?.includes('${')) {
    const host = fill(hostTemplate, connectionConfig);
    if (
      !/^[A-Za-z0-9.-]+(?::\d{1,5})?$/.test(host) ||
      url.hostname.toLowerCase() !== host.replace(/:\d+$/, '').toLowerCase()
    ) {
      throw new AuthConnectError(
        'invalid_connection',
        'The connection config puts an invalid host in the provider URL',
      );
    }
  }
  return url;
}

/** Fills every string value of a parameter map (provider `token_params`, `refresh_params`, ...). */
export function interpolateParams(
  params: Record<string, string | number | boolean> | undefined,
  connectionConfig: ConnectionConfig,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(params ?? {})) {
    out[key] = typeof value === 'string' ? interpolateValue(value, connectionConfig) : String(value);
  }
  return out;
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
