import { createHmac, randomUUID } from 'node:crypto';
import { EVENT_SUBJECTS, type AuthEvent } from '@switchboard/contracts';
import { connect, headers as natsHeaders, type NatsConnection } from 'nats';
import { Webhook } from 'standardwebhooks';

/**
 * Publishes auth events on JetStream exactly as the vault does (its outbox publishes the same schema to
 * the same subject, with the event id as `Nats-Msg-Id`), for tests that need many events quickly.
 */
export class AuthEventPublisher {
  private constructor(private readonly nc: NatsConnection) {}

  static async connect(natsUrl: string): Promise<AuthEventPublisher> {
    return new AuthEventPublisher(await connect({ servers: natsUrl }));
  }

  event(environmentId: number, connectionId: string, overrides: Partial<AuthEvent> = {}): AuthEvent {
    return {
      id: `auth-${randomUUID()}`,
      environmentId,
      connectionId,
      providerConfigKey: 'github',
      provider: 'github',
      operation: 'creation',
      success: true,
      tags: { test: 'durability' },
      endUser: null,
      webhookUrlOverride: null,
      error: null,
      occurredAt: new Date().toISOString(),
      ...overrides,
    };
  }

  async publish(event: AuthEvent): Promise<void> {
    const h = natsHeaders();
    await this.nc
      .jetstream()
      .publish(EVENT_SUBJECTS.auth, Buffer.from(JSON.stringify(event)), { msgID: event.id, headers: h });
  }

  async close(): Promise<void> {
    await this.nc.drain();
  }
}

/** The body of `POST /integrations` for a Linear integration whose webhooks are signed with `webhookSecret`. */
export const linearIntegration = (webhookSecret: string) => ({
  provider: 'linear',
  unique_key: 'linear',
  credentials: {
    type: 'OAUTH2',
    client_id: 'lin-client',
    client_secret: 'lin-client-secret',
    webhook_secret: webhookSecret,
  },
});

/**
 * POSTs `body` to the stack's Linear webhook URL, signed with `secret` as Linear signs (`linear-signature`,
 * HMAC-SHA256 of the bytes), with a fresh `linear-delivery` id and, when given, `linear-event`.
 */
export function sendLinearWebhook(
  stack: { gatewayUrl: string; environmentUuid: string },
  body: unknown,
  secret: string,
  event?: string,
): Promise<Response> {
  const text = JSON.stringify(body);
  return fetch(`${stack.gatewayUrl}/webhook/${stack.environmentUuid}/linear`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'linear-signature': createHmac('sha256', secret).update(text).digest('hex'),
      'linear-delivery': randomUUID(),
      ...(event !== undefined ? { 'linear-event': event } : {}),
    },
    body: text,
  });
}

/**
 * A Standard Webhooks signature of `id.timestamp.body` keyed by the `whsec_` secret's bytes, under the
 * `webhook-` names, or the `svix-` ones Svix sends (Clerk's webhooks).
 */
export function standardWebhookHeaders(
  secret: string,
  body: string,
  names: 'webhook' | 'svix' = 'webhook',
): Record<string, string> {
  const id = `msg_${randomUUID()}`;
  const at = new Date();
  return {
    [`${names}-id`]: id,
    [`${names}-timestamp`]: String(Math.floor(at.getTime() / 1000)),
    [`${names}-signature`]: new Webhook(secret).sign(id, at, body),
  };
}

export const svixHeaders = (secret: string, body: string) => standardWebhookHeaders(secret, body, 'svix');
