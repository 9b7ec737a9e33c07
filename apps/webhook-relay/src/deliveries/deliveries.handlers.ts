import { Controller, Inject } from '@nestjs/common';
import {
  deliveryRequestSchema,
  listDeliveriesRequestSchema,
  type DeliveryPage,
  type WebhookDelivery,
  type WebhookDeliveryDetail,
  WEBHOOK_REQUESTS,
} from '@switchboard/contracts';
import type { RelayDb, WebhookDeliveryModel as DeliveryRow } from '@switchboard/db';
import { NatsHandler } from '@switchboard/messaging';
import type { z } from 'zod';
import { RELAY_DB } from '../database/database.module';
import { Dispatcher } from '../dispatch/dispatcher';
import { WebhookRelayError } from '../webhook-relay.errors';

const iso = (date: Date | null) => (date ? date.toISOString() : null);

function toApi(row: DeliveryRow): WebhookDelivery {
  return {
    id: Number(row.id),
    webhook_id: row.eventId,
    type: row.type as WebhookDelivery['type'],
    url: row.url,
    connection_id: row.connectionId,
    provider_config_key: row.providerConfigKey,
    status: row.status as WebhookDelivery['status'],
    attempts: row.attempts,
    last_status_code: row.lastStatusCode,
    last_error: row.lastError,
    next_attempt_at: row.status === 'pending' ? iso(row.nextAttemptAt) : null,
    delivered_at: iso(row.deliveredAt),
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

/** The delivery log of an environment: what was sent where, how each attempt went, and redelivery. */
@Controller()
export class DeliveriesHandlers {
  constructor(
    @Inject(RELAY_DB) private readonly db: RelayDb,
    private readonly dispatcher: Dispatcher,
  ) {}

  @NatsHandler(WEBHOOK_REQUESTS.listDeliveries)
  async list(request: z.infer<typeof listDeliveriesRequestSchema>): Promise<DeliveryPage> {
    const { query } = request;
    const rows = await this.db.webhookDelivery.findMany({
      where: {
        environmentId: request.environmentId,
        ...(query.cursor !== undefined ? { id: { lt: BigInt(query.cursor) } } : {}),
        ...(query.status ? { status: query.status } : {}),
        ...(query.type ? { type: query.type } : {}),
        ...(query.connection_id ? { connectionId: query.connection_id } : {}),
      },
      orderBy: { id: 'desc' },
      take: query.limit + 1,
    });
    const page = rows.slice(0, query.limit);
    const last = page[page.length - 1];
    return { data: page.map(toApi), next_cursor: rows.length > query.limit && last ? Number(last.id) : null };
  }

  @NatsHandler(WEBHOOK_REQUESTS.getDelivery)
  async get(request: z.infer<typeof deliveryRequestSchema>): Promise<WebhookDeliveryDetail> {
    const row = await this.db.webhookDelivery.findFirst({
      where: { id: BigInt(request.id), environmentId: request.environmentId },
      include: { attemptLog: { orderBy: { id: 'asc' } } },
    });
    if (!row)
      throw new WebhookRelayError('not_found', `No webhook delivery ${request.id} in this environment`);
    return {
      ...toApi(row),
      body: row.body,
      attempt_log: row.attemptLog.map((a) => ({
        attempt: a.attempt,
        started_at: a.startedAt.toISOString(),
        duration_ms: a.durationMs,
        status_code: a.statusCode,
        error: a.error,
      })),
    };
  }

  /**
   * Sends a delivery again now, with the same `webhook-id`, whatever its state; its endpoint is
   * re-enabled if a 410 had disabled it (asking for a redelivery says the endpoint is back).
   */
  @NatsHandler(WEBHOOK_REQUESTS.redeliver)
  async redeliver(request: z.infer<typeof deliveryRequestSchema>): Promise<WebhookDelivery> {
    const row = await this.db.webhookDelivery.findFirst({
      where: { id: BigInt(request.id), environmentId: request.environmentId },
    });
    if (!row)
      throw new WebhookRelayError('not_found', `No webhook delivery ${request.id} in this environment`);
    if (row.status === 'refused')
      throw new WebhookRelayError(
        'conflict',
        'A refused provider webhook was never accepted; it cannot be sent',
      );
    if (row.status === 'dead_lettered')
      throw new WebhookRelayError('conflict', 'A dead-lettered event was never planned; it cannot be sent');
    if (row.status === 'pending' && row.lockedUntil && row.lockedUntil.getTime() > Date.now()) {
      throw new WebhookRelayError('conflict', 'This delivery is being attempted right now');
    }
    const [, updated] = await this.db.$transaction([
      this.db.webhookDisabledEndpoint.deleteMany({
        where: { environmentId: request.environmentId, url: row.url },
      }),
      this.db.webhookDelivery.update({
        where: { id: row.id },
        // A fresh schedule: the attempt count restarts so the retries of the schedule apply again.
        data: {
          status: 'pending',
          attempts: 0,
          nextAttemptAt: new Date(),
          lockedUntil: null,
          deliveredAt: null,
        },
      }),
    ]);
    this.dispatcher.endpointEnabled(request.environmentId, [row.url]);
    this.dispatcher.kick();
    return toApi(updated);
  }
}
