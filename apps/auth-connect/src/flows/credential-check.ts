import type { ResolvedProvider } from '@switchboard/providers';
import { AuthConnectError } from '../auth-connect.errors';
import { fetch } from 'undici';
import { providerEgress } from '../exchanges/provider-egress';
import { interpolateUrl } from '../exchanges/templates';

/** What an end user typed for an API_KEY or BASIC provider. */
export type TypedCredentials =
  | { type: 'API_KEY'; apiKey: string }
  | { type: 'BASIC'; username: string; password: string };

const CHECK_TIMEOUT_MS = 10_000;
const PLACEHOLDER = /\$\{([^{}]+)\}/g;

/**
 * Fills `${apiKey}`, `${username}`, `${password}` (also as `${credentials.x}`) and `${connectionConfig.x}`
 * in a proxy header, query or path template. An unknown placeholder becomes empty, as the proxy does.
 */
export function fillCredentialTemplate(
  template: string,
  credentials: TypedCredentials,
  connectionConfig: Record<string, unknown>,
): string {
  const values: Record<string, string> =
    credentials.type === 'API_KEY'
      ? { apiKey: credentials.apiKey }
      : { username: credentials.username, password: credentials.password };
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
 * Tries the credentials against the provider's `proxy.verification` endpoints, with the headers and query
 * the proxy would add, so a wrong key fails now rather than on the first proxied call. Any 2xx from one
 * endpoint passes. Providers without a verification entry are not checked (there is nothing safe to call).
 * The typed secret never appears in the error: only the provider's status does.
 */
export async function checkCredentials(
  provider: ResolvedProvider,
  credentials: TypedCredentials,
  connectionConfig: Record<string, unknown>,
): Promise<void> {
  const proxy = provider.proxy;
  const verification = proxy?.verification;
  if (!proxy || !verification) return;
  const base = interpolateUrl(verification.base_url_override ?? proxy.base_url, connectionConfig, provider);

  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(proxy.headers ?? {}))
    headers[name.toLowerCase()] = fillCredentialTemplate(value, credentials, connectionConfig);
  for (const [name, value] of Object.entries(verification.headers ?? {})) {
    headers[name.toLowerCase()] = fillCredentialTemplate(value, credentials, connectionConfig);
  }
  if (credentials.type === 'BASIC' && !headers['authorization']) {
    headers['authorization'] =
      `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`;
  }

  let lastStatus: number | undefined;
  let unreachable = false;
  let refused: string | undefined;
  for (const endpoint of verification.endpoints) {
    const path = fillCredentialTemplate(endpoint, credentials, connectionConfig);
    const url = new URL(base.toString().replace(/\/$/, '') + (path.startsWith('/') ? path : `/${path}`));
    for (const [name, value] of Object.entries(proxy.query ?? {})) {
      url.searchParams.set(name, fillCredentialTemplate(value, credentials, connectionConfig));
    }
    try {
      const res = await fetch(url, {
        method: verification.method,
        headers: { 'user-agent': 'Switchboard', accept: 'application/json', ...headers },
        redirect: 'manual',
        signal: AbortSignal.timeout(CHECK_TIMEOUT_MS),
        dispatcher: providerEgress(),
      });
      await res.body?.cancel();
      if (res.status >= 200 && res.status < 300) return;
      lastStatus = res.status;
    } catch (error) {
      const cause = (error as { cause?: { code?: unknown; reason?: unknown } }).cause;
      if (cause?.code === 'SWITCHBOARD_EGRESS_REFUSED') refused = String(cause.reason);
      else unreachable = true;
    }
  }
  const why =
    lastStatus !== undefined
      ? `${provider.display_name} refused the credentials (HTTP ${lastStatus})`
      : refused !== undefined
        ? `The connection config points ${provider.display_name} at an address that may not be called (${refused})`
        : unreachable
          ? `${provider.display_name} could not be reached to check the credentials`
          : `${provider.display_name} did not accept the credentials`;
  throw new AuthConnectError('connection_test_failed', why);
}
