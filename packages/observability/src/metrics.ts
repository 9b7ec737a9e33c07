import { metrics, type Attributes, type Histogram, type Meter } from '@opentelemetry/api';
import { AggregationType, type ViewOptions } from '@opentelemetry/sdk-metrics';

/**
 * Bucket boundaries (seconds, as the semantic conventions measure durations) for request-scale
 * latencies: fine below 10 ms, where a healthy proxy hop or NATS request lands, coarse up to a minute,
 * where slow upstreams and timeouts do. Few buckets keep `record` cheap on the hot path.
 */
export const DURATION_BUCKETS_S = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
];

/** Lag buckets (seconds): an event delivered at once, after a retry or two, or hours later after an outage. */
export const LAG_BUCKETS_S = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 14_400];

/**
 * Metrics the instrumentations would record twice or at a cardinality we do not want: the HTTP
 * instrumentation's server durations (every service records `http.server.request.duration` itself, per
 * route template rather than per raw URL, and the gateway's `/proxy` front door bypasses the
 * instrumentation anyway).
 */
export const METRIC_VIEWS: ViewOptions[] = [
  {
    meterName: '@opentelemetry/instrumentation-http',
    instrumentName: 'http.server.duration',
    aggregation: { type: AggregationType.DROP },
  },
  {
    meterName: '@opentelemetry/instrumentation-http',
    instrumentName: 'http.server.request.duration',
    aggregation: { type: AggregationType.DROP },
  },
];

/**
 * The meter of a package or app. Instruments must be created after `startTracing` registered the meter
 * provider (the API has no proxy meter: one made earlier stays a no-op), which holds for module-level
 * instruments because `tracing.ts` is the first import of every `service.ts`.
 */
export function meterFor(name: string): Meter {
  return metrics.getMeter(name);
}

/** A duration histogram in seconds with the request-scale buckets. */
export function durationHistogram(meter: Meter, name: string, description: string): Histogram {
  return meter.createHistogram(name, {
    description,
    unit: 's',
    advice: { explicitBucketBoundaries: DURATION_BUCKETS_S },
  });
}

const OTHER_METHOD = '_OTHER';
const KNOWN_METHODS = new Set([
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'OPTIONS',
  'TRACE',
  'CONNECT',
]);

/**
 * `http.server.request.duration` per method, route template and status (semantic-convention names; a
 * 5xx also carries `error.type`, so errors are `count where error.type is set`). Attribute sets are made
 * once per (route, method, status) and reused: recording allocates nothing of ours, which matters on
 * the proxy's hot path. Routes are templates (`/connection/:connectionId`, `/proxy/*`), never raw URLs,
 * and methods outside the standard set are `_OTHER`: the cardinality stays bounded.
 */
export class HttpServerMetrics {
  private readonly histogram: Histogram;
  private readonly sets = new Map<string, Map<string, Map<number, Attributes>>>();

  constructor(meter: Meter = meterFor('@switchboard/observability')) {
    this.histogram = durationHistogram(
      meter,
      'http.server.request.duration',
      'Duration of HTTP server requests',
    );
  }

  record(method: string, route: string, status: number, seconds: number): void {
    this.histogram.record(seconds, this.attributes(method, route, status));
  }

  private attributes(method: string, route: string, status: number): Attributes {
    let byMethod = this.sets.get(route);
    if (!byMethod) {
      byMethod = new Map();
      this.sets.set(route, byMethod);
    }
    let byStatus = byMethod.get(method);
    if (!byStatus) {
      if (method !== OTHER_METHOD && !KNOWN_METHODS.has(method))
        return this.attributes(OTHER_METHOD, route, status);
      byStatus = new Map();
      byMethod.set(method, byStatus);
    }
    let set = byStatus.get(status);
    if (!set) {
      set = {
        'http.request.method': method,
        'http.route': route,
        'http.response.status_code': status,
        ...(status >= 500 ? { 'error.type': String(status) } : {}),
      };
      byStatus.set(status, set);
    }
    return set;
  }
}

/**
 * Attribute sets keyed by a few strings, made once and reused (for instruments recorded per message or
 * per upstream call). `max` bounds the cache should a key ever be unbounded; past it, sets are made per call.
 */
export class AttributeSets {
  private readonly sets = new Map<string, Attributes>();

  constructor(private readonly max = 2_000) {}

  get(key: string, make: () => Attributes): Attributes {
    let set = this.sets.get(key);
    if (!set) {
      set = make();
      if (this.sets.size < this.max) this.sets.set(key, set);
    }
    return set;
  }
}

/** Seconds elapsed since a `performance.now()` reading. */
export function secondsSince(startMs: number): number {
  return (performance.now() - startMs) / 1000;
}
