import { trace } from '@switchboard/observability';
import type { FastifyInstance } from 'fastify';

/**
 * Names the request's trace in the answer, as W3C Trace Context's `traceresponse` header
 * (`00-<trace id>-<span id>-<flags>`), when the request is traced: the console links an answer (an error
 * above all) to its trace in the trace UI. Ids only: nothing of the request or its caller.
 */
export function registerTraceResponse(fastify: FastifyInstance): void {
  fastify.addHook('onRequest', (_request, reply, done) => {
    const span = trace.getActiveSpan();
    const context = span?.spanContext();
    if (span?.isRecording() && context) {
      const flags = context.traceFlags.toString(16).padStart(2, '0');
      void reply.header('traceresponse', `00-${context.traceId}-${context.spanId}-${flags}`);
    }
    done();
  });
}
