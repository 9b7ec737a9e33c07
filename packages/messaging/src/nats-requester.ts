import { randomUUID } from 'node:crypto';
import { SwitchboardError, type Reply } from '@switchboard/contracts';
import { injectTraceContext, SpanKind, SpanStatusCode, trace } from '@switchboard/observability';
import { headers as natsHeaders, type MsgHdrs, type NatsConnection } from 'nats';
import { recordSent } from './metrics';
import { transportError } from './transport-error';
import { requestRaw } from './raw-reply';

const tracer = trace.getTracer('@switchboard/messaging');
const headerSetter = { set: (h: MsgHdrs, key: string, value: string) => h.set(key, value) };

export interface RequestOptions {
  timeoutMs?: number;
}

/**
 * Request/reply over core NATS, speaking the packet format of Nest's NATS transport
 * (`{pattern, data, id}` → `{id, response, err, isDisposed}`) so handlers stay plain Nest
 * `@MessagePattern`s. Using the NATS client directly (rather than Nest's ClientProxy) gives an
 * immediate "no responders" instead of a timeout when a service is down.
 */
export class NatsRequester {
  constructor(
    private readonly nc: NatsConnection,
    private readonly defaultTimeoutMs = 10_000,
  ) {}

  /** The largest message the server announced (its INFO), read when asked: it can change on reconnect. */
  get maxPayload(): number | undefined {
    return this.nc.info?.max_payload;
  }

  async request<T>(subject: string, data: unknown, options: RequestOptions = {}): Promise<T> {
    return tracer.startActiveSpan(
      `${subject} send`,
      {
        kind: SpanKind.CLIENT,
        attributes: { 'messaging.system': 'nats', 'messaging.destination.name': subject },
      },
      async (span) => {
        const start = performance.now();
        let errorType: string | undefined;
        try {
          const hdrs = natsHeaders();
          injectTraceContext(hdrs, headerSetter);
          const packet = JSON.stringify({ pattern: subject, data, id: randomUUID() });
          let msg;
          try {
            msg = await this.nc.request(subject, Buffer.from(packet), {
              timeout: options.timeoutMs ?? this.defaultTimeoutMs,
              headers: hdrs,
            });
          } catch (error) {
            throw transportError(subject, error);
          }
          const reply = JSON.parse(Buffer.from(msg.data).toString('utf8')) as {
            response?: Reply<T>;
            err?: unknown;
          };
          if (reply.err !== undefined && reply.err !== null) {
            throw new SwitchboardError('server_error', `${subject} failed in the remote service`);
          }
          const response = reply.response;
          if (!response) throw new SwitchboardError('server_error', `${subject} sent an empty reply`);
          if (!response.ok)
            throw new SwitchboardError(
              response.error.code,
              response.error.message,
              response.error.errors,
              response.error.payload,
            );
          return response.data;
        } catch (error) {
          errorType = error instanceof SwitchboardError ? error.code : 'server_error';
          if (error instanceof SwitchboardError) span.setAttribute('switchboard.error_code', error.code);
          span.setStatus({ code: SpanStatusCode.ERROR });
          throw error;
        } finally {
          recordSent(subject, start, errorType);
          span.end();
        }
      },
    );
  }

  /** A request to a `serveRaw` responder: its reply's metadata and body bytes (see raw-reply.ts). */
  async requestRaw<M>(
    subject: string,
    data: unknown,
    options: RequestOptions = {},
  ): Promise<{ meta: M; body: Uint8Array }> {
    return requestRaw<M>(this.nc, subject, data, { timeoutMs: options.timeoutMs ?? this.defaultTimeoutMs });
  }
}
