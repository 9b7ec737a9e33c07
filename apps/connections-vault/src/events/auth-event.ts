import { authEventSchema, EVENT_SUBJECTS, type AuthEvent, type EndUser } from '@switchboard/contracts';
import type { ConnectionRow, OutboxInsert } from '../connections/connections.repository';

/**
 * The auth event for the webhook relay. `id` is both the delivery id customers see and the JetStream
 * de-duplication key, so it names the one thing that happened (this creation, this failed refresh).
 */
export function authEvent(
  row: ConnectionRow,
  id: string,
  operation: AuthEvent['operation'],
  error: { type: string; description: string } | null = null,
): OutboxInsert {
  const event = authEventSchema.parse({
    id,
    environmentId: row.environmentId,
    connectionId: row.connectionId,
    providerConfigKey: row.providerConfigKey,
    provider: row.provider,
    operation,
    success: error === null,
    tags: (row.tags as Record<string, string> | null) ?? {},
    endUser: (row.endUser as EndUser | null) ?? null,
    webhookUrlOverride: row.webhookUrlOverride,
    error,
    occurredAt: new Date().toISOString(),
  });
  return { eventId: id, subject: EVENT_SUBJECTS.auth, payload: event };
}
