import type { ResolvedProvider } from '@switchboard/providers';
import {
  typedCredentialPlacement,
  typedCredentialValues,
  type TypedCredentials,
} from './credential-placement';
import { ProviderExchangeError } from './exchange.errors';
import { callProvider } from './provider-http';
import { interpolateUrl, interpolateValue, type ConnectionConfig } from './templates';
import { valueAtPath } from './value-at-path';

/**
 * What a post-connect call is made with: the access token an OAuth 2 code exchange just returned, or the
 * API key / username and password an end user typed (already verified), placed where the proxy puts them.
 */
export type PostConnectAuth = { accessToken: string } | { typed: TypedCredentials };

/** The credential on one call: template values, the headers and query it adds, what to redact. */
interface CallAuth {
  values: Record<string, string>;
  headers: Record<string, string>;
  query: [string, string][];
  secrets: string[];
}

function callAuth(provider: ResolvedProvider, auth: PostConnectAuth, config: ConnectionConfig): CallAuth {
  if ('accessToken' in auth) {
    const token = auth.accessToken;
    return {
      values: { accessToken: token },
      headers: { authorization: `Bearer ${token}` },
      query: [],
      secrets: [token, encodeURIComponent(token)],
    };
  }
  const values = typedCredentialValues(auth.typed);
  const { headers, query } = typedCredentialPlacement(provider, auth.typed, config);
  const placed = [...Object.values(headers), ...query.map(([, value]) => value)];
  return { values, headers, query, secrets: [...Object.values(values), ...placed] };
}

/**
 * Fills a template's credential placeholders (`${accessToken}`, `${apiKey}`, `${credentials.password}`…)
 * with the credential and the rest with `fill`, piece by piece: a credential's text is never read as a
 * template itself.
 */
function withCredentials(
  template: string,
  values: Record<string, string>,
  fill: (text: string) => string,
  encode: boolean,
): string {
  let out = '';
  let last = 0;
  for (const match of template.matchAll(/\$\{(?:credentials\.)?([A-Za-z_][A-Za-z0-9_]*)\}/g)) {
    const value = values[match[1]!];
    if (value === undefined) continue;
    out += fill(template.slice(last, match.index)) + (encode ? encodeURIComponent(value) : value);
    last = match.index + match[0].length;
  }
  return out + fill(template.slice(last));
}

/**
 * The catalog's `post_connect` calls, made once the credentials are known to work and before the
 * connection is stored: after an OAuth 2 code exchange with the new access token, and after an API key or
 * basic pair passed its check, with that credential where the proxy puts it. They fill the
 * connection-config keys the provider vouches for but does not hand over otherwise (the account a webhook
 * is routed by). Whatever the browser sent never reaches these keys; a call that fails or lacks a value
 * fails the flow, so a connection never lands without its routing key.
 */
export async function runPostConnect(input: {
  provider: ResolvedProvider;
  auth: PostConnectAuth;
  connectionConfig: ConnectionConfig;
  timeoutMs?: number;
}): Promise<Record<string, string>> {
  const { provider, connectionConfig } = input;
  const auth = callAuth(provider, input.auth, connectionConfig);
  const out: Record<string, string> = {};
  for (const call of provider.post_connect ?? []) {
    const url = interpolateUrl(
      withCredentials(call.url, auth.values, (text) => text, true),
      connectionConfig,
      provider,
    );
    for (const [name, value] of auth.query) url.searchParams.set(name, value);
    const headers: Record<string, string> = { accept: 'application/json', ...auth.headers };
    // A header may name the connection's config (Squarespace's User-Agent) as well as the credential.
    for (const [name, value] of Object.entries(call.headers ?? {}))
      headers[name.toLowerCase()] = withCredentials(
        value,
        auth.values,
        (text) => interpolateValue(text, connectionConfig),
        false,
      );
    const { body } = await callProvider({
      stage: 'post_connect',
      provider: provider.name,
      method: call.method,
      url,
      headers,
      ...(call.body !== undefined ? { body: call.body } : {}),
      secrets: auth.secrets,
      ...(input.timeoutMs !== undefined ? { timeoutMs: input.timeoutMs } : {}),
    });
    for (const [key, path] of Object.entries(call.connection_config)) {
      const value = valueAtPath(body, path);
      if (typeof value !== 'string' && typeof value !== 'number') {
        throw new ProviderExchangeError(
          `${provider.display_name} did not say which account this is (${path})`,
          {
            stage: 'post_connect',
            failure: 'invalid_response',
            provider: provider.name,
          },
        );
      }
      out[key] = String(value);
    }
  }
  return out;
}
