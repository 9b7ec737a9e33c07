import { AttributeSets, durationHistogram, meterFor, type Attributes } from '@switchboard/observability';

const meter = meterFor('@switchboard/proxy-engine');

/**
 * `switchboard.proxy.upstream.duration`: each request to a provider, from sending to its answer's headers
 * (one per attempt, so retries and 401 refreshes show), by provider (the catalog key, a bounded set) and
 * status, or by `error.type` (the transport's error code) when no answer came.
 */
const upstream = durationHistogram(
  meter,
  'switchboard.proxy.upstream.duration',
  'Latency of requests to providers (to response headers), by provider and status',
);

/** provider → status → attribute set: two map lookups and no allocation per call. */
const byProvider = new Map<string, Map<number, Attributes>>();
const failures = new AttributeSets();

export function recordUpstream(provider: string, status: number, startMs: number): void {
  let byStatus = byProvider.get(provider);
  if (!byStatus) {
    byStatus = new Map();
    byProvider.set(provider, byStatus);
  }
  let set = byStatus.get(status);
  if (!set) {
    set = { 'switchboard.provider': provider, 'http.response.status_code': status };
    byStatus.set(status, set);
  }
  upstream.record((performance.now() - startMs) / 1000, set);
}

export function recordUpstreamFailure(provider: string, error: unknown, startMs: number): void {
  const code = (error as { code?: unknown } | undefined)?.code;
  const type = typeof code === 'string' && code.length <= 64 ? code : 'error';
  upstream.record(
    (performance.now() - startMs) / 1000,
    failures.get(`${provider}\u0000${type}`, () => ({
      'switchboard.provider': provider,
      'error.type': type,
    })),
  );
}
