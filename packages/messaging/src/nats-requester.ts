import { randomUUID } from 'node:crypto';
import {
  fieldErrorsFromZod,
  jsonDepthExceeds,
  MESSAGE_JSON_MAX_DEPTH,
  SwitchboardError,
  type NatsReplyOf,
  type NatsRequestDef,
  type NatsRequestOf,
  type Reply,
} from '@switchboard/contracts';
import type { NatsConnection } from 'nats';
import { sendRequest, unwrapReply } from './request-handling';
import { linkState, transportError, unreachable } from './transport-error';
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

  /**
   * Sends a request defined in `@switchboard/contracts` and resolves with its reply (or throws the coded
   * error the handler answered). The request is checked with the definition's schema before it is sent,
   * and refused with the same `invalid_body` error the handler would answer, so a bad payload costs no
   * round trip and fails where it was built; what is sent is the payload as given (the handler applies
   * the schema's defaults). Definitions of bulk payloads opt out (`validateOnSend: false`).
   */
  call<D extends NatsRequestDef>(
    def: D,
    data: NatsRequestOf<D>,
    options?: RequestOptions,
  ): Promise<NatsReplyOf<D>> {
    if (def.validateOnSend !== false) {
      const parsed = def.request.safeParse(data);
      if (!parsed.success) {
        return Promise.reject(
          new SwitchboardError(
            'invalid_body',
            `invalid payload for ${def.subject}`,
            fieldErrorsFromZod(parsed.error),
          ),
        );
      }
    }
    return this.send<NatsReplyOf<D>>(def.subject, data, options);
  }

  /**
   * A request by its subject alone, sent without the caller's check, its reply type asserted by the
   * caller: only for what must reach a handler past `call` (tests of the transport and of the handlers'
   * own checks). Services use `call`.
   */
  requestUnchecked<T>(subject: string, data: unknown, options: RequestOptions = {}): Promise<T> {
    return this.send<T>(subject, data, options);
  }

  /**
   * Request/reply by subject, as `call` and `requestUnchecked` send it.
   *
   * The payload is encoded before the request starts, and only its bytes are kept until they are published:
   * an async function keeps every variable it holds across an await, so `data` (a batch of 1000 records,
   * say) and its JSON text would otherwise stay reachable for the whole round trip, survive the young
   * generation's collections, and pile up in old and large-object space until a full collection
   * (bench/README.md, "Why the current settings").
   */
  private send<T>(subject: string, data: unknown, options: RequestOptions = {}): Promise<T> {
    let packet: Uint8Array | undefined;
    try {
      packet = Buffer.from(JSON.stringify({ pattern: subject, data, id: randomUUID() }));
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    const timeout = options.timeoutMs ?? this.defaultTimeoutMs;
    const link = linkState(this.nc);
    return sendRequest(subject, async (headers) => {
      // Reconnecting: refused at once, nothing sent (nats.js would hold it and maybe send it much later).
      if (link.down) throw unreachable(subject);
      const drops = link.drops;
      let msg;
      try {
        // nats.js publishes synchronously: the bytes are in its outbound buffer when this returns.
        const pending = this.nc.request(subject, packet ?? new Uint8Array(), { timeout, headers });
        packet = undefined;
        msg = await pending;
      } catch (error) {
        throw transportError(subject, error, link.down || link.drops !== drops);
      }
      // The reply envelope (`{response: {ok, data}}`) wraps the data in two objects.
      if (jsonDepthExceeds(msg.data, MESSAGE_JSON_MAX_DEPTH + 2)) {
        throw new SwitchboardError('server_error', `${subject} answered a reply nesting too deep`);
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
