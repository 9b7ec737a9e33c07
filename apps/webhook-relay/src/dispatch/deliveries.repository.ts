import { Inject, Injectable } from '@nestjs/common';
import type { WebhookEventType } from '@switchboard/contracts';
import { Prisma, type RelayDb } from '@switchboard/db';
import { RELAY_DB } from '../database/database.module';

export interface NewDelivery {
  environmentId: number;
  eventId: string;
  type: WebhookEventType;
  url: string;
  connectionId: string | null;
  providerConfigKey: string | null;
  body: string;
  headers: Record<string, string>;
  /** When the event was published (epoch ms), for the delivery-lag metric. */
  eventCreatedAtMs?: number;
}

/** A delivery this process holds the lease of, with what an attempt needs. */
export interface ClaimedDelivery {
  id: bigint;
  environmentId: number;
  eventId: string;
  url: string;
  body: string;
  headers: Record<string, string>;
  attempts: number;
  endpointDisabled: boolean;
  /** When the delivery was stored (epoch ms), for the delivery-lag metric. */
  eventCreatedAtMs?: number;
}

export interface AttemptRecord {
  startedAt: Date;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
}

export interface NextState {
  status: 'delivered' | 'failed' | 'pending' | 'endpoint_disabled';
  nextAttemptAt?: Date;
}

interface ClaimedRow {
  id: bigint;
  environment_id: number;
  event_id: string;
  url: string;
  body: string;
  headers: Record<string, string> | null;
  attempts: number;
  disabled: boolean;
  created_at?: Date;
}

// Columns are `timestamp` holding UTC (Prisma's convention); `now()` is converted explicitly so the
// comparison never depends on the session's time zone.
const UTC_NOW = Prisma.raw(`(now() AT TIME ZONE 'UTC')`);

/** A new delivery as the columns of `relay.webhook_deliveries`, for `jsonb_to_recordset`. */
const columnsOf = (d: NewDelivery) => ({
  environment_id: d.environmentId,
  event_id: d.eventId,
  type: d.type,
  url: d.url,
  connection_id: d.connectionId,
  provider_config_key: d.providerConfigKey,
  body: d.body,
  headers: d.headers,
});

const toClaimed = (row: ClaimedRow): ClaimedDelivery => ({
  id: row.id,
  environmentId: row.environment_id,
  eventId: row.event_id,
  url: row.url,
  body: row.body,
  headers: row.headers ?? {},
  attempts: row.attempts,
  endpointDisabled: row.disabled,
  eventCreatedAtMs: row.created_at?.getTime(),
});

/**
 * The delivery state machine in Postgres. Raw SQL where the ORM has no equivalent: `INSERT … ON CONFLICT
 * DO NOTHING RETURNING` (idempotent re-processing of an event) and `FOR UPDATE SKIP LOCKED` leases (any
 * number of relay replicas share the work, and a killed one's leases simply expire).
 */
@Injectable()
export class DeliveriesRepository {
  constructor(@Inject(RELAY_DB) private readonly db: RelayDb) {}

  /**
   * Stores deliveries, once per (webhook id, URL). With `leaseMs` the new rows come back leased to the
   * caller, who sends them at once; rows that already existed (an event processed again) are left to the
   * poller and not returned.
   */
  /**
   * An event that will never be delivered (a permanent failure, or its tries exhausted), in the delivery
   * log as `dead_lettered`: sent nowhere, never retried. The body says why, never the event's payload (a
   * flood of bad events must not store payloads). Once per event, however often JetStream hands it out.
   */
  async deadLetter(entry: {
    environmentId: number;
    eventId: string;
    type: WebhookEventType;
    connectionId: string | null;
    providerConfigKey: string | null;
    reason: string;
    tries: number;
  }): Promise<void> {
    await this.db.webhookDelivery.createMany({
      data: [
        {
          environmentId: entry.environmentId,
          eventId: `dead_${entry.eventId}`,
          type: entry.type,
          url: '',
          connectionId: entry.connectionId,
          providerConfigKey: entry.providerConfigKey,
          body: JSON.stringify({ eventId: entry.eventId, reason: entry.reason, tries: entry.tries }),
          status: 'dead_lettered',
          lastError: entry.reason,
        },
      ],
      skipDuplicates: true,
    });
  }

  async insert(deliveries: NewDelivery[], leaseMs: number | null): Promise<ClaimedDelivery[]> {
    if (deliveries.length === 0) return [];
    const lease = leaseMs === null ? null : new Date(Date.now() + leaseMs);
    const rows = await this.db.$queryRaw<ClaimedRow[]>`
      INSERT INTO relay.webhook_deliveries
        (environment_id, event_id, type, url, connection_id, provider_config_key, body, headers, locked_until,
         next_attempt_at, created_at, updated_at)
      SELECT d.environment_id, d.event_id, d.type, d.url, d.connection_id, d.provider_config_key, d.body, d.headers, ${lease}::timestamp,
        ${UTC_NOW}, ${UTC_NOW}, ${UTC_NOW}
      FROM jsonb_to_recordset(${JSON.stringify(deliveries.map(columnsOf))}::jsonb) AS d(environment_id int, event_id text, type text, url text, connection_id text, provider_config_key text, body text, headers jsonb)
      ON CONFLICT (event_id, url) DO NOTHING
      RETURNING id, environment_id, event_id, url, body, headers, attempts, created_at,
        EXISTS (SELECT 1 FROM relay.webhook_disabled_endpoints e
                WHERE e.environment_id = webhook_deliveries.environment_id AND e.url = webhook_deliveries.url) AS disabled`;
    return rows.map(toClaimed);
  }

  /**
   * Stores deliveries whose first attempt was already made (straight from their event), with that
   * attempt, in one statement for the whole batch. A row that already exists (the event was processed
   * before) is left as it is.
   */
  async insertAttempted(
    rows: { delivery: NewDelivery; attempt: AttemptRecord; next: NextState }[],
  ): Promise<void> {
    if (rows.length === 0) return;
    const payload = JSON.stringify(
      rows.map(({ delivery, attempt: a, next: n }) => ({
        ...columnsOf(delivery),
        status: n.status,
        next_attempt_at: n.nextAttemptAt?.toISOString() ?? null,
        started_at: a.startedAt.toISOString(),
        duration_ms: a.durationMs,
        status_code: a.statusCode,
        error: a.error,
      })),
    );
    // Timestamps travel as ISO strings (UTC) and are stored as UTC `timestamp`s, like Prisma's.
    await this.db.$executeRaw`
      WITH input AS (
        SELECT * FROM jsonb_to_recordset(${payload}::jsonb) AS d(environment_id int, event_id text, type text,
          url text, connection_id text, provider_config_key text, body text, headers jsonb, status text,
          next_attempt_at timestamptz, started_at timestamptz, duration_ms int, status_code int, error text)
      ), stored AS (
        INSERT INTO relay.webhook_deliveries
          (environment_id, event_id, type, url, connection_id, provider_config_key, body, headers, status, attempts,
           next_attempt_at, last_status_code, last_error, delivered_at, created_at, updated_at)
        SELECT environment_id, event_id, type, url, connection_id, provider_config_key, body, headers, status, 1,
          COALESCE(next_attempt_at AT TIME ZONE 'UTC', ${UTC_NOW}), status_code, error,
          CASE WHEN status = 'delivered' THEN ${UTC_NOW} END, started_at AT TIME ZONE 'UTC', ${UTC_NOW}
        FROM input
        ON CONFLICT (event_id, url) DO NOTHING
        RETURNING id, event_id, url
      )
      INSERT INTO relay.webhook_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error)
      SELECT stored.id, 1, input.started_at AT TIME ZONE 'UTC', input.duration_ms, input.status_code, input.error
      FROM stored JOIN input ON input.event_id = stored.event_id AND input.url = stored.url`;
  }

  /** When the earliest pending delivery becomes due (its retry time, or its lease's end), if any. */
  async nextDueAt(): Promise<Date | null> {
    const rows = await this.db.$queryRaw<{ at: Date | null }[]>`
      SELECT min(GREATEST(next_attempt_at, COALESCE(locked_until, next_attempt_at))) AS at
      FROM relay.webhook_deliveries WHERE status = 'pending'`;
    return rows[0]?.at ?? null;
  }

  async disabledEndpoints(): Promise<{ environmentId: number; url: string }[]> {
    const rows = await this.db.webhookDisabledEndpoint.findMany({
      select: { environmentId: true, url: true },
    });
    return rows;
  }

  /** Leases up to `limit` due deliveries, skipping the URLs given (saturated or behind an open breaker). */
  async claimDue(limit: number, leaseMs: number, skipUrls: string[]): Promise<ClaimedDelivery[]> {
    if (limit <= 0) return [];
    const rows = await this.db.$queryRaw<ClaimedRow[]>`
      UPDATE relay.webhook_deliveries d
      SET locked_until = ${UTC_NOW} + ${leaseMs} * interval '1 millisecond'
      FROM (
        SELECT id FROM relay.webhook_deliveries
        WHERE status = 'pending' AND next_attempt_at <= ${UTC_NOW}
          AND (locked_until IS NULL OR locked_until < ${UTC_NOW})
          AND NOT (url = ANY(${skipUrls}::text[]))
        ORDER BY next_attempt_at
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED
      ) due
      WHERE d.id = due.id
      RETURNING d.id, d.environment_id, d.event_id, d.url, d.body, d.headers, d.attempts, d.created_at,
        EXISTS (SELECT 1 FROM relay.webhook_disabled_endpoints e WHERE e.environment_id = d.environment_id AND e.url = d.url) AS disabled`;
    return rows.map(toClaimed);
  }

  /**
   * Records one attempt and moves the delivery to its next state, releasing the lease: one statement
   * (a data-modifying CTE), because it runs once per attempt on the hot path.
   */
  async recordAttempt(delivery: ClaimedDelivery, attempt: AttemptRecord, next: NextState): Promise<void> {
    const attemptNumber = delivery.attempts + 1;
    await this.db.$executeRaw`
      WITH logged AS (
        INSERT INTO relay.webhook_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error)
        VALUES (${delivery.id}, ${attemptNumber}, ${attempt.startedAt}::timestamp, ${attempt.durationMs}, ${attempt.statusCode}, ${attempt.error})
      )
      UPDATE relay.webhook_deliveries SET
        attempts = ${attemptNumber},
        status = ${next.status},
        last_status_code = ${attempt.statusCode},
        last_error = ${attempt.error},
        locked_until = NULL,
        next_attempt_at = COALESCE(${next.nextAttemptAt ?? null}::timestamp, next_attempt_at),
        delivered_at = CASE WHEN ${next.status} = 'delivered' THEN ${UTC_NOW} ELSE delivered_at END,
        updated_at = ${UTC_NOW}
      WHERE id = ${delivery.id}`;
  }

  /** Makes every delivery waiting to retry `url` due now (its endpoint answered again); leased ones stay as they are. */
  async pullForward(url: string): Promise<number> {
    return this.db.$executeRaw`
      UPDATE relay.webhook_deliveries SET next_attempt_at = ${UTC_NOW}, updated_at = ${UTC_NOW}
      WHERE status = 'pending' AND url = ${url} AND next_attempt_at > ${UTC_NOW}
        AND (locked_until IS NULL OR locked_until < ${UTC_NOW})`;
  }

  /** Gives a lease back without an attempt (breaker open, no capacity), to be retried at `at`. */
  async release(id: bigint, at: Date): Promise<void> {
    await this.db.webhookDelivery.update({ where: { id }, data: { lockedUntil: null, nextAttemptAt: at } });
  }

  async markEndpointDisabled(
    delivery: { environmentId: number; url: string },
    reason: string,
  ): Promise<void> {
    await this.db.$transaction([
      this.db.webhookDisabledEndpoint.upsert({
        where: { environmentId_url: { environmentId: delivery.environmentId, url: delivery.url } },
        create: { environmentId: delivery.environmentId, url: delivery.url, reason },
        update: {},
      }),
    ]);
  }

  async skipDisabled(delivery: ClaimedDelivery): Promise<void> {
    await this.db.webhookDelivery.update({
      where: { id: delivery.id },
      data: {
        status: 'endpoint_disabled',
        lockedUntil: null,
        lastError: 'the endpoint is disabled (it answered 410 Gone)',
      },
    });
  }

  /** Removes finished deliveries older than the retention. */
  async prune(olderThan: Date): Promise<number> {
    return this.db.$executeRaw`
      DELETE FROM relay.webhook_deliveries
      WHERE status <> 'pending' AND updated_at < ${olderThan}`;
  }
}
