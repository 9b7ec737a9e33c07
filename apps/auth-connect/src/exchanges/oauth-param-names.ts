import type { ResolvedProvider } from '@switchboard/providers';
import { ProviderExchangeError, type ExchangeStage } from './exchange.errors';

/**
 * Providers that speak OAuth 2 with their own spelling: the catalog's `authorization_param_names` /
 * `token_param_names` rename standard parameters (TikTok's `client_key`, `app_id`, `auth_code`) and
 * `token_response_path` says where the token fields sit in the answer (TikTok Business: under `data`).
 */

/** The same parameters with the provider's names; a renamed one replaces its standard name. */
export function renameParams(
  params: Record<string, string>,
  names: Partial<Record<string, string>> | undefined,
): Record<string, string> {
  if (!names) return params;
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(params)) out[names[key] ?? key] = value;
  return out;
}

/** The object holding `access_token` & co.; the whole answer unless the catalog names a path. */
export function tokenAnswer(
  raw: Record<string, unknown>,
  provider: ResolvedProvider,
  stage: ExchangeStage,
): Record<string, unknown> {
  const path = provider.token_response_path;
  if (!path) return raw;
  let current: unknown = raw;
  for (const part of path.split('.')) {
    current =
      typeof current === 'object' && current !== null && !Array.isArray(current)
        ? (current as Record<string, unknown>)[part]
        : undefined;
  }
  if (typeof current !== 'object' || current === null || Array.isArray(current)) {
    const message = typeof raw['message'] === 'string' ? ` (${raw['message'].slice(0, 200)})` : '';
    throw new ProviderExchangeError(
      `${provider.name} answered without "${path}" in the token response${message}`,
      { stage, failure: 'invalid_response', provider: provider.name },
    );
  }
  return current as Record<string, unknown>;
}
