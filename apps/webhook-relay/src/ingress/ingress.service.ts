import { createHash, randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { IngestReply, IngestRequest, WebhookRefusal } from '@switchboard/contracts';
import { NATS_CONNECTION, NatsRequester } from '@switchboard/messaging';
import type { RelayDb } from '@switchboard/db';
import { EnvironmentDirectory, ingressInputOf, WebhookIngress } from '@switchboard/webhook-ingress';
import type { NatsConnection } from 'nats';
import { WEBHOOK_RELAY_ENV, type WebhookRelayEnv } from '../config/env';
import { RELAY_DB } from '../database/database.module';

/** Refused webhooks of one integration and reason are counted in one delivery-log row per hour. */
const REFUSAL_BUCKET_MS = 60 * 60 * 1000;

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
   * nests too deep; sent nowhere): the customer can count and see them. Only what we know is kept, never
   * the sender's body or headers (a flood must not store payloads).
   * Refusals are aggregated: one row per integration, reason and hour, whose `attempts` counts the
   * refused requests (the body adds the first and last time), so a flood of bad signatures adds a bounded
   * number of rows, not one per request, for the log's whole retention.
   */
  async recordRefusal(refusal: WebhookRefusal): Promise<void> {
    const receivedAt = new Date(refusal.receivedAt);
    // A verified webhook that nests too deep is rare (it needs the provider's signature): one row each.
    if (refusal.kind === 'dead_lettered') return this.recordDeadLetter(refusal, receivedAt);
    const bucket = new Date(Math.floor(receivedAt.getTime() / REFUSAL_BUCKET_MS) * REFUSAL_BUCKET_MS);
    const group = createHash('sha256')
      .update(`${refusal.environmentId}\u0000${refusal.providerConfigKey}\u0000${refusal.reason}`)
      .digest('base64url')
      .slice(0, 22);
    const eventId = `refused_${group}_${bucket.toISOString().slice(0, 13)}`;
    const body = JSON.stringify({
      provider: refusal.provider,
      providerConfigKey: refusal.providerConfigKey,
      reason: refusal.reason,
      count: 1,
      first_received_at: refusal.receivedAt,
      last_received_at: refusal.receivedAt,
    });
    // One statement, so concurrent refusals of a flood add up instead of racing.
    await this.db.$executeRaw`
      INSERT INTO relay.webhook_deliveries
        (environment_id, event_id, type, url, provider_config_key, body, status, attempts, last_error, next_attempt_at)
      VALUES (${refusal.environmentId}, ${eventId}, 'forward', '', ${refusal.providerConfigKey}, ${body},
        'refused', 1, ${`signature not verified: ${refusal.reason}`}, ${receivedAt})
      ON CONFLICT (event_id, url) DO UPDATE SET
        attempts = webhook_deliveries.attempts + 1,
        body = jsonb_set(
          jsonb_set(webhook_deliveries.body::jsonb, '{count}', to_jsonb(webhook_deliveries.attempts + 1)),
          '{last_received_at}', to_jsonb(${refusal.receivedAt}::text)
        )::text,
        updated_at = now()
      WHERE webhook_deliveries.status = 'refused'`.catch((error: unknown) => {
      // The refusal stands whether or not it could be logged.
      this.logger.error(`could not record a refused webhook: ${(error as Error).message}`);
    });
  }

  private async recordDeadLetter(refusal: WebhookRefusal, receivedAt: Date): Promise<void> {
    await this.db.webhookDelivery
      .create({
        data: {
          environmentId: refusal.environmentId,
          eventId: `dead_${randomUUID()}`,
          type: 'forward',
          url: '',
          providerConfigKey: refusal.providerConfigKey,
          body: JSON.stringify({
            provider: refusal.provider,
            providerConfigKey: refusal.providerConfigKey,
            reason: refusal.reason,
            receivedAt: refusal.receivedAt,
          }),
          status: 'dead_lettered',
          lastError: refusal.reason,
          nextAttemptAt: receivedAt,
        },
      })
      .catch((error: unknown) => {
        this.logger.error(`could not record a dead-lettered webhook: ${(error as Error).message}`);
      });
  }
}
