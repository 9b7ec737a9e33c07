import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { IngestReply, IngestRequest, WebhookRefusal } from '@switchboard/contracts';
import { NATS_CONNECTION, NatsRequester } from '@switchboard/messaging';
import type { RelayDb } from '@switchboard/db';
import { EnvironmentDirectory, ingressInputOf, WebhookIngress } from '@switchboard/webhook-ingress';
import type { NatsConnection } from 'nats';
import { WEBHOOK_RELAY_ENV, type WebhookRelayEnv } from '../config/env';
import { RELAY_DB } from '../database/database.module';

/**
 * The relay's side of provider webhook ingress. By default the gateway verifies and stores webhooks itself
 * (`@switchboard/webhook-ingress`, embedded) and only sends refusals here to be logged; with
 * `SWITCHBOARD_WEBHOOK_INGRESS_MODE=remote` it sends every webhook here and this runs the same ingress.
 */
@Injectable()
export class IngressService {
  private readonly logger = new Logger('Ingress');
  private readonly ingress: WebhookIngress;

  constructor(
    environments: EnvironmentDirectory,
    nats: NatsRequester,
    @Inject(NATS_CONNECTION) nc: NatsConnection,
    @Inject(WEBHOOK_RELAY_ENV) env: WebhookRelayEnv,
    @Inject(RELAY_DB) private readonly db: RelayDb,
  ) {
    this.ingress = new WebhookIngress({
      environments,
      nats,
      nc,
      serverUrl: env.SWITCHBOARD_SERVER_URL,
      logger: this.logger,
      recordRefusal: (refusal) => this.recordRefusal(refusal),
      maxJsonDepth: env.SWITCHBOARD_JSON_MAX_DEPTH,
    });
  }

  async ingest(request: IngestRequest): Promise<IngestReply> {
    return this.ingress.ingest(ingressInputOf(request));
  }

  /**
   * A refused webhook in the delivery log (status `refused`, or `dead_lettered` for one that verified but
   * nests too deep; sent nowhere): the customer can count and see them. Only what we know is kept, never the sender's body or headers (a flood must not store payloads).
   */
  async recordRefusal(refusal: WebhookRefusal): Promise<void> {
    const receivedAt = new Date(refusal.receivedAt);
    const dead = refusal.kind === 'dead_lettered';
    await this.db.webhookDelivery
      .create({
        data: {
          environmentId: refusal.environmentId,
          eventId: `${dead ? 'dead' : 'refused'}_${randomUUID()}`,
          type: 'forward',
          url: '',
          providerConfigKey: refusal.providerConfigKey,
          body: JSON.stringify({
            provider: refusal.provider,
            providerConfigKey: refusal.providerConfigKey,
            reason: refusal.reason,
            receivedAt: refusal.receivedAt,
          }),
          status: dead ? 'dead_lettered' : 'refused',
          lastError: dead ? refusal.reason : `signature not verified: ${refusal.reason}`,
          nextAttemptAt: receivedAt,
        },
      })
      .catch((error: unknown) => {
        // The refusal stands whether or not it could be logged.
        this.logger.error(`could not record a refused webhook: ${(error as Error).message}`);
      });
  }
}
