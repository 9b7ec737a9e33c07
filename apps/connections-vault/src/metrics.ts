import { AttributeSets, meterFor } from '@switchboard/observability';

const meter = meterFor('@switchboard/connections-vault');

/**
 * `switchboard.credentials.refresh`: token refreshes this process ran under its lease, by provider and
 * outcome: `success`, `failure` (with `error.type`, the code recorded on the connection) or `unavailable`
 * (auth-connect could not take the call; nothing recorded on the connection).
 */
const refreshes = meter.createCounter('switchboard.credentials.refresh', {
  description: 'Credential refreshes, by provider and outcome',
});
const sets = new AttributeSets();

export function recordRefresh(
  provider: string,
  outcome: 'success' | 'failure' | 'unavailable',
  code?: string,
): void {
  refreshes.add(
    1,
    sets.get(`${provider}\u0000${outcome}\u0000${code ?? ''}`, () => ({
      'switchboard.provider': provider,
      'switchboard.refresh.outcome': outcome,
      ...(code ? { 'error.type': code } : {}),
    })),
  );
}
