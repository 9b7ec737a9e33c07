import { recordForeignSpans, type ForeignSpan } from '@switchboard/observability';
import type { ClientInterceptors } from '@temporalio/client';
import {
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
  type OpenTelemetrySinks,
  type SerializableSpan,
} from '@temporalio/interceptors-opentelemetry';
import type { InjectedSinks, WorkerInterceptors } from '@temporalio/worker';

/**
 * Trace context through Temporal, with the SDK's OpenTelemetry interceptors: the client writes the active
 * trace into the headers of every workflow it starts or signals-with-start (a sync run triggered through
 * the API, `syncs/sync-schedules.ts`; a schedule's runs are started by the server, without one), the
 * workflow sandbox continues it (workflow and activity-scheduling spans) and writes it into each
 * activity's headers, and the activity runs in it, so the NATS request to functions-runtime, the script's
 * run and its provider calls are one trace with the request that started the workflow.
 */
export function clientInterceptors(): ClientInterceptors {
  return { workflow: [new OpenTelemetryWorkflowClientInterceptor()] };
}

/**
 * The SDK's workflow interceptors (inbound, outbound, internals), bundled into the sandbox with the
 * workflows (`workflow-bundle.ts`): a worker given a prebuilt bundle cannot add any.
 */
export const WORKFLOW_INTERCEPTOR_MODULES = [
  require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors'),
];

/** The worker's side of tracing: activity interceptors and the sink the sandbox's spans come out of. */
export function workerTracing(): {
  interceptors: WorkerInterceptors;
  sinks: InjectedSinks<OpenTelemetrySinks>;
} {
  return {
    interceptors: {
      activity: [
        (ctx) => ({
          inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
          outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
        }),
      ],
    },
    sinks: {
      // The sandbox has its own OpenTelemetry (1.x) that only records; its finished spans come out here
      // and go through this process's exporter with their own ids. Not again while a history is replayed.
      exporter: {
        export: {
          fn: (_info, spans) => recordForeignSpans(spans.map(fromWorkflow)),
          callDuringReplay: false,
        },
      },
    },
  };
}

function fromWorkflow(span: SerializableSpan): ForeignSpan {
  return {
    name: span.name,
    kind: span.kind,
    traceId: span.spanContext.traceId,
    spanId: span.spanContext.spanId,
    ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
    traceFlags: span.spanContext.traceFlags,
    startTime: span.startTime,
    endTime: span.endTime,
    status: span.status,
    attributes: span.attributes,
    links: span.links,
    events: span.events.map((e) => ({
      name: e.name,
      time: e.time,
      ...(e.attributes ? { attributes: e.attributes } : {}),
    })),
  };
}
