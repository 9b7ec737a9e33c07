import { context, startTracing, stopTracing, trace } from '@switchboard/observability';
import { TraceLogger } from './trace-logger';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN_ID = '00f067aa0ba902b7';

/** Runs `fn` inside a span context and returns what the logger wrote to stdout. */
function written(fn: () => void, inSpan: boolean): string {
  const chunks: string[] = [];
  const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    chunks.push(String(chunk));
    return true;
  });
  try {
    const ctx = inSpan
      ? trace.setSpanContext(context.active(), { traceId: TRACE_ID, spanId: SPAN_ID, traceFlags: 1 })
      : context.active();
    context.with(ctx, fn);
  } finally {
    spy.mockRestore();
  }
  return chunks.join('');
}

describe('TraceLogger', () => {
  const saved = { ...process.env };
  beforeAll(() => {
    // The context manager (AsyncLocalStorage) comes with the SDK; nothing is exported.
    Object.assign(process.env, { OTEL_TRACES_EXPORTER: 'none', OTEL_METRICS_EXPORTER: 'none' });
    startTracing('trace-logger-test');
  });
  afterAll(async () => {
    await stopTracing();
    process.env = saved;
  });

  it('puts trace_id and span_id on a JSON line written inside a span', () => {
    const logger = new TraceLogger('test', { json: true, colors: false });
    const line = JSON.parse(written(() => logger.log('hello'), true)) as Record<string, unknown>;
    expect(line).toMatchObject({ message: 'hello', context: 'test', trace_id: TRACE_ID, span_id: SPAN_ID });
  });

  it('appends them to a pretty line', () => {
    const logger = new TraceLogger('test', { json: false, colors: false });
    const line = written(() => logger.log('hello'), true);
    expect(line).toMatch(new RegExp(`hello trace_id=${TRACE_ID} span_id=${SPAN_ID}\\n$`));
  });

  it('leaves lines outside a span as they were', () => {
    const logger = new TraceLogger('test', { json: true, colors: false });
    const line = JSON.parse(written(() => logger.log('hello'), false)) as Record<string, unknown>;
    expect(line).not.toHaveProperty('trace_id');
    expect(line).not.toHaveProperty('span_id');
  });
});
