import {
  DataPointType,
  MeterProvider,
  MetricReader,
  type HistogramMetricData,
} from '@opentelemetry/sdk-metrics';
import { DURATION_BUCKETS_S, HttpServerMetrics } from './metrics';

/** An in-memory reader: what a Prometheus scrape or an OTLP push would see, read on demand. */
class InMemoryReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

async function histogram(reader: InMemoryReader, name: string): Promise<HistogramMetricData> {
  const { resourceMetrics } = await reader.collect();
  const metric = resourceMetrics.scopeMetrics
    .flatMap((s) => s.metrics)
    .find((m) => m.descriptor.name === name);
  if (!metric || metric.dataPointType !== DataPointType.HISTOGRAM) throw new Error(`no histogram ${name}`);
  return metric;
}

describe('HttpServerMetrics', () => {
  let reader: InMemoryReader;
  let provider: MeterProvider;
  let http: HttpServerMetrics;

  beforeEach(() => {
    reader = new InMemoryReader();
    provider = new MeterProvider({ readers: [reader] });
    http = new HttpServerMetrics(provider.getMeter('test'));
  });
  afterEach(() => provider.shutdown());

  it('records http.server.request.duration in seconds per route template, method and status, 5xx with error.type', async () => {
    http.record('GET', '/connection/:connectionId', 200, 0.004);
    http.record('GET', '/connection/:connectionId', 200, 0.2);
    http.record('POST', '/proxy/*', 502, 1.5);

    const metric = await histogram(reader, 'http.server.request.duration');
    expect(metric.descriptor.unit).toBe('s');
    const points = metric.dataPoints.map((p) => ({
      attributes: p.attributes,
      count: p.value.count,
      sum: p.value.sum,
    }));
    expect(points).toEqual(
      expect.arrayContaining([
        {
          attributes: {
            'http.request.method': 'GET',
            'http.route': '/connection/:connectionId',
            'http.response.status_code': 200,
          },
          count: 2,
          sum: expect.closeTo(0.204, 6),
        },
        {
          attributes: {
            'http.request.method': 'POST',
            'http.route': '/proxy/*',
            'http.response.status_code': 502,
            'error.type': '502',
          },
          count: 1,
          sum: 1.5,
        },
      ]),
    );
    expect(points).toHaveLength(2);
    // Millisecond-scale buckets: a 4 ms answer and a 200 ms one land in different buckets.
    const get = metric.dataPoints.find((p) => p.attributes['http.request.method'] === 'GET')!;
    expect(get.value.buckets.boundaries).toEqual(DURATION_BUCKETS_S);
    expect(get.value.buckets.counts.filter((c) => c > 0)).toEqual([1, 1]);
  });

  it('folds unknown methods into _OTHER, so a caller cannot grow the series', async () => {
    for (const method of ['BREW', 'PROPFIND', 'X-ANYTHING']) http.record(method, '/proxy/*', 200, 0.01);
    const metric = await histogram(reader, 'http.server.request.duration');
    expect(metric.dataPoints.map((p) => [p.attributes['http.request.method'], p.value.count])).toEqual([
      ['_OTHER', 3],
    ]);
  });
});
