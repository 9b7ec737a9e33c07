import { Logger } from '@nestjs/common';
import { jsonDepthExceeds, MESSAGE_JSON_MAX_DEPTH } from '@switchboard/contracts';
import type { NatsConnection, Subscription } from 'nats';
import type { z } from 'zod';

const logger = new Logger('Broadcast');

/**
 * Listens to a broadcast (an announcement such as `vault.v1.connections.changed` that every replica must
 * see, so a plain subscription with no queue group) and hands `onMessage` each payload that is JSON and
 * passes `schema`.
 *
 * Listeners use these announcements to drop cached data early; a TTL covers what they miss. So a message
 * that cannot be read is dropped with one warning rather than thrown: the warning names the subject and
 * why, never the payload, which may carry identifiers that do not belong in logs. A handler that throws
 * (or rejects) is logged too, and the subscription keeps running: losing it would silently leave the
 * cache to its TTL for every later announcement.
 *
 * Returns the subscription so the caller can unsubscribe when it shuts down.
 */
export function listenBroadcast<S extends z.ZodType>(
  nc: NatsConnection,
  subject: string,
  schema: S,
  /**
   * `respond` answers the message when it was sent as a request (a reply subject), and does nothing
   * otherwise: a broadcast request is answered only by the listeners it concerns, once each.
   */
  onMessage: (message: z.infer<S>, respond: (reply: unknown) => void) => void | Promise<void>,
): Subscription {
  return nc.subscribe(subject, {
    callback: (error, msg) => {
      if (error) {
        logger.warn(`${subject} subscription failed: ${error.message}`);
        return;
      }
      if (jsonDepthExceeds(msg.data, MESSAGE_JSON_MAX_DEPTH)) {
        logger.warn(`${subject}: dropped a message nesting deeper than ${MESSAGE_JSON_MAX_DEPTH} levels`);
        return;
      }
      let json: unknown;
      try {
        json = JSON.parse(Buffer.from(msg.data).toString('utf8'));
      } catch {
        // The parser's message quotes the input, so only say that it was not JSON.
        logger.warn(`${subject}: dropped a message that is not JSON`);
        return;
      }
      const parsed = schema.safeParse(json);
      if (!parsed.success) {
        logger.warn(
          `${subject}: dropped a message that does not match its schema (${describe(parsed.error)})`,
        );
        return;
      }
      try {
        const respond = (reply: unknown) => {
          if (msg.reply) msg.respond(Buffer.from(JSON.stringify(reply)));
        };
        const done = onMessage(parsed.data, respond);
        if (done instanceof Promise) done.catch((handlerError: unknown) => logFailure(subject, handlerError));
      } catch (handlerError) {
        logFailure(subject, handlerError);
      }
    },
  });
}

/** Where and how the payload failed (paths and issue codes), without any of its values. */
function describe(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(root)'}: ${issue.code}`)
    .join(', ');
}

function logFailure(subject: string, error: unknown): void {
  logger.error(
    `${subject} handler failed: ${error instanceof Error ? error.message : String(error)}`,
    error instanceof Error ? error.stack : undefined,
  );
}
