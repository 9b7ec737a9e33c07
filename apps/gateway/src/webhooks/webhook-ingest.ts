import { Logger } from '@nestjs/common';
import { type IngestReply, type IngestRequest, WEBHOOK_REQUESTS } from '@switchboard/contracts';
import type { NatsRequester } from '@switchboard/messaging';
import { EnvironmentDirectory, WebhookIngress, type IngressInput } from '@switchboard/webhook-ingress';
import type { NatsConnection } from 'nats';

/** Where a received provider webhook is verified and stored (`SWITCHBOARD_WEBHOOK_INGRESS_MODE`). */
export interface WebhookIngest {
  ingest(input: IngressInput): Promise<IngestReply>;
}

/**
 * Embedded (the default): verified and published to JetStream here, so a webhook crosses NATS only for its
 * store and its delivery. A refusal (bad signature, rare) is one request to the relay, which logs it with
 * the deliveries; the gateway never writes the relay's tables.
 */
export function embeddedWebhookIngest(
  nats: NatsRequester,
  nc: NatsConnection,
  serverUrl: string,
  maxJsonDepth?: number,
): WebhookIngest {
  const logger = new Logger('WebhookIngress');
  return new WebhookIngress({
    environments: new EnvironmentDirectory(nats),
    nats,
    nc,
    serverUrl,
    logger,
    maxJsonDepth,
    recordRefusal: async (refusal) => {
      try {
        await nats.call(WEBHOOK_REQUESTS.recordRefusal, refusal);
      } catch (error) {
        // The refusal stands whether or not it could be logged.
        logger.error(`could not record a refused webhook: ${(error as Error).message}`);
      }
    },
  });
}

/** Remote: the relay runs the same ingress behind `relay.v1.provider-webhook.ingest`. */
export function remoteWebhookIngest(nats: NatsRequester): WebhookIngest {
  return {
    ingest: ({ rawBody: _bytes, ...request }: IngressInput) =>
      nats.call(WEBHOOK_REQUESTS.ingest, request satisfies IngestRequest),
  };
}
