import type { ResolvedProvider } from '@switchboard/providers';
import { ProviderExchangeError } from './exchange.errors';
import { callProvider } from './provider-http';
import { interpolateUrl, interpolateValue, type ConnectionConfig } from './templates';
import { valueAtPath } from './value-at-path';

/**
 * The catalog's `post_connect` calls, made once right after the token exchange with the new access token:
 * they fill the connection-config keys the provider vouches for but does not put in its token response
 * (the account id a webhook is routed by). Whatever the browser sent never reaches these keys; a call
 * that fails or lacks a value fails the flow, so a connection never lands without its routing key.
 */
export async function runPostConnect(input: {
  provider: ResolvedProvider;
  accessToken: string;
  connectionConfig: ConnectionConfig;
  timeoutMs?: number;
}): Promise<Record<string, string>> {
  const { provider, accessToken } = input;
  const out: Record<string, string> = {};
  const withToken = (text: string, encode: boolean) =>
    text.replaceAll('${accessToken}', encode ? encodeURIComponent(accessToken) : accessToken);
  for (const call of provider.post_connect ?? []) {
    const url = interpolateUrl(withToken(call.url, true), input.connectionConfig, provider);
    const headers: Record<string, string> = {
      accept: 'application/json',
      authorization: `Bearer ${accessToken}`,
    };
    // A header may name the connection's config (Squarespace's User-Agent) as well as the new token.
    for (const [name, value] of Object.entries(call.headers ?? {}))
      headers[name.toLowerCase()] = value
        .split('${accessToken}')
        .map((part) => interpolateValue(part, input.connectionConfig))
        .join(accessToken);
    const { body } = await callProvider({
      stage: 'post_connect',
      provider: provider.name,
      method: call.method,
      url,
      headers,
      ...(call.body !== undefined ? { body: call.body } : {}),
      secrets: [accessToken, encodeURIComponent(accessToken)],
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
