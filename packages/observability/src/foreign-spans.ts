import {
  context,
  ROOT_CONTEXT,
  trace,
  TraceFlags,
  type Attributes,
  type HrTime,
  type Link,
  type SpanKind,
  type SpanStatus,
} from '@opentelemetry/api';
import { RandomIdGenerator, type IdGenerator } from '@opentelemetry/sdk-trace';

/**
 * A span recorded somewhere this process's SDK does not reach (Temporal's workflow sandbox, which has its
 * own OpenTelemetry copy and hands finished spans out through a sink), with the ids it was recorded with.
 */
export interface ForeignSpan {
  name: string;
  kind: SpanKind;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  traceFlags: number;
  startTime: HrTime;
  endTime: HrTime;
  status: SpanStatus;
  attributes: Attributes;
  links: Link[];
  events: { name: string; time: HrTime; attributes?: Attributes }[];
}

/**
 * The SDK's id generator, except while a foreign span is being re-recorded: then it hands out that span's
 * own ids, so spans that name it as their parent (activities started from a workflow) still find it.
 */
class ReplayableIdGenerator implements IdGenerator {
  private readonly random = new RandomIdGenerator();
  forced: { traceId: string; spanId: string } | undefined;
  generateTraceId(): string {
    return this.forced?.traceId ?? this.random.generateTraceId();
  }
  generateSpanId(): string {
    return this.forced?.spanId ?? this.random.generateSpanId();
  }
}

export const idGenerator = new ReplayableIdGenerator();
const tracer = trace.getTracer('@switchboard/observability/foreign-spans');

/**
 * Records finished spans of another runtime through this process's pipeline (its processors, exporter and
 * resource), keeping their trace id, span id, parent, times, status, attributes and events. A no-op when
 * tracing is off. Synchronous, so the forced ids never leak into another span.
 */
export function recordForeignSpans(spans: readonly ForeignSpan[]): void {
  for (const foreign of spans) {
    const parent = foreign.parentSpanId
      ? trace.setSpanContext(ROOT_CONTEXT, {
          traceId: foreign.traceId,
          spanId: foreign.parentSpanId,
          traceFlags: foreign.traceFlags & TraceFlags.SAMPLED,
          isRemote: true,
        })
      : ROOT_CONTEXT;
    idGenerator.forced = { traceId: foreign.traceId, spanId: foreign.spanId };
    let span;
    try {
      span = context.with(parent, () =>
        tracer.startSpan(foreign.name, {
          kind: foreign.kind,
          startTime: foreign.startTime,
          attributes: foreign.attributes,
          links: foreign.links,
        }),
      );
    } finally {
      idGenerator.forced = undefined;
    }
    for (const event of foreign.events) span.addEvent(event.name, event.attributes, event.time);
    span.setStatus(foreign.status);
    span.end(foreign.endTime);
  }
}
