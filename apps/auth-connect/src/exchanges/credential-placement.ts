import type { ResolvedProvider } from '@switchboard/providers';

/** What an end user typed for an API_KEY or BASIC provider. */
export type TypedCredentials =
  | { type: 'API_KEY'; apiKey: string }
  | { type: 'BASIC'; username: string; password: string };

const PLACEHOLDER = /\$\{([^{}]+)\}/g;

/** The values a typed credential fills: `${apiKey}`, or `${username}` and `${password}`. */
export function typedCredentialValues(credentials: TypedCredentials): Record<string, string> {
  return credentials.type === 'API_KEY'
    ? { apiKey: credentials.apiKey }
    : { username: credentials.username, password: credentials.password };
}

/**
 * Fills `${apiKey}`, `${username}`, `${password}` (also as `${credentials.x}`) and `${connectionConfig.x}`
 * in a proxy header, query or path template. An unknown placeholder becomes empty, as the proxy does.
 */
export function fillCredentialTemplate(
  template: string,
  credentials: TypedCredentials,
  connectionConfig: Record<string, unknown>,
): string {
  const values = typedCredentialValues(credentials);
  return template.replace(PLACEHOLDER, (_m, name: string) => {
    const key = name.replace(/^credentials\./, '');
    if (key in values) return values[key] ?? '';
    if (name.startsWith('connectionConfig.')) {
      const value = connectionConfig[name.slice('connectionConfig.'.length)];
      return typeof value === 'string' || typeof value === 'number' ? String(value) : '';
    }
    return '';
  });
}

/**
 * Where the proxy puts a typed credential on every call to the provider: its `proxy.headers` and
 * `proxy.query` templates filled, and for BASIC an `Authorization: Basic` pair unless a template sets one.
 * The credential check and the post-connect calls send exactly this, so what works at connect time is
 * what the proxy will send later.
 */
export function typedCredentialPlacement(
  provider: Pick<ResolvedProvider, 'proxy'>,
  credentials: TypedCredentials,
  connectionConfig: Record<string, unknown>,
): { headers: Record<string, string>; query: [string, string][] } {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(provider.proxy?.headers ?? {}))
    headers[name.toLowerCase()] = fillCredentialTemplate(value, credentials, connectionConfig);
  if (credentials.type === 'BASIC' && !headers['authorization']) {
    headers['authorization'] =
      `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`;
  }
  const query: [string, string][] = Object.entries(provider.proxy?.query ?? {}).map(([name, value]) => [
    name,
    fillCredentialTemplate(value, credentials, connectionConfig),
  ]);
  return { headers, query };
}
