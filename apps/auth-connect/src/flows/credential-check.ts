import type { ResolvedProvider } from '@switchboard/providers';
import { AuthConnectError } from '../auth-connect.errors';
import { fetch } from 'undici';
import { providerEgress } from '../exchanges/provider-egress';
import { interpolateUrl } from '../exchanges/templates';
import {
  fillCredentialTemplate,
  typedCredentialPlacement,
  type TypedCredentials,
} from '../exchanges/credential-placement';

const CHECK_TIMEOUT_MS = 10_000;

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

  const placed = typedCredentialPlacement(provider, credentials, connectionConfig);
  const headers = placed.headers;
  for (const [name, value] of Object.entries(verification.headers ?? {})) {
    headers[name.toLowerCase()] = fillCredentialTemplate(value, credentials, connectionConfig);
  }

  let lastStatus: number | undefined;
  let unreachable = false;
  let refused: string | undefined;
  for (const endpoint of verification.endpoints) {
    const path = fillCredentialTemplate(endpoint, credentials, connectionConfig);
    const url = new URL(base.toString().replace(/\/$/, '') + (path.startsWith('/') ? path : `/${path}`));
    for (const [name, value] of placed.query) url.searchParams.set(name, value);
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
