import { randomUUID } from 'node:crypto';
import { SwitchboardError, type Reply } from '@switchboard/contracts';
import type { NatsConnection } from 'nats';
import { sendRequest, unwrapReply } from './request-handling';
import { transportError } from './transport-error';
import { requestRaw } from './raw-reply';

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
    return sendRequest(subject, async (headers) => {
      const packet = JSON.stringify({ pattern: subject, data, id: randomUUID() });
      let msg;
      try {
        msg = await this.nc.request(subject, Buffer.from(packet), {
          timeout: options.timeoutMs ?? this.defaultTimeoutMs,
          headers,
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
      return unwrapReply(subject, reply.response);
    });
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
