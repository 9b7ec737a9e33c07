import { IncomingRequestDeserializer } from '@nestjs/microservices/deserializers';
import { jsonDepthExceeds, MESSAGE_JSON_MAX_DEPTH } from '@switchboard/contracts';

/**
 * What a handler is given instead of a request payload nesting deeper than `MESSAGE_JSON_MAX_DEPTH`: the
 * payload is never handed on (validating it, or storing it as JSON, would walk every level recursively and
 * overflow the stack), and `handleRequest` answers `invalid_body`.
 */
export class PayloadTooDeep {
  readonly maxDepth = MESSAGE_JSON_MAX_DEPTH;
}

/**
 * The request deserializer of every service's Nest NATS server (service-kit's bootstrap): Nest's JSON
 * decoding, plus a depth check on the raw bytes first. A packet too deep is still parsed (`JSON.parse` does
 * not recurse) for its id and pattern, so the caller gets a reply, but its `data` becomes a
 * {@link PayloadTooDeep}.
 */
export class DepthLimitedNatsDeserializer extends IncomingRequestDeserializer {
  override deserialize(value: Uint8Array, options?: Record<string, unknown>) {
    const packet = JSON.parse(
      Buffer.from(value.buffer, value.byteOffset, value.length).toString('utf8'),
    ) as unknown;
    // The packet wraps the payload in one object (`{pattern, data, id}`).
    if (jsonDepthExceeds(value, MESSAGE_JSON_MAX_DEPTH + 1) && packet && typeof packet === 'object') {
      (packet as { data?: unknown }).data = new PayloadTooDeep();
    }
    return super.deserialize(packet, options);
  }
}
