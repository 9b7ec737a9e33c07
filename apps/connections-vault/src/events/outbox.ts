import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { VaultDb } from '@switchboard/db';
import { ensureEventStream, streamBudgetOf, NATS_CONNECTION, publishEvent } from '@switchboard/messaging';
import type { NatsConnection } from 'nats';
import { VAULT_ENV, type VaultEnv } from '../config/env';
import { VAULT_DB } from '../database/database.module';

const SWEEP_EVERY_MS = 5_000;
/** Younger rows are still being published by the request that wrote them. */
const SWEEP_MIN_AGE_MS = 5_000;
const SWEEP_BATCH = 100;

/**
 * Publishes events written to `vault.outbox_events` (in the same transaction as the change they
 * announce) to JetStream, then deletes them. The writer publishes at once; a sweeper on every replica
 * retries whatever a crash or a NATS outage left behind. Publishing twice is harmless: the event id is
 * the JetStream de-duplication id.
 */
@Injectable()
export class OutboxPublisher implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Outbox');
  private timer: NodeJS.Timeout | undefined;
  private streamReady: Promise<void> | undefined;
  private sweeping = false;

  constructor(
    @Inject(VAULT_DB) private readonly db: VaultDb,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(VAULT_ENV) private readonly env: VaultEnv,
  ) {}

  onModuleInit(): void {
    this.timer = setInterval(() => void this.sweep(), SWEEP_EVERY_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** Publishes the given events now; failures are left to the sweeper. */
  async flush(eventIds: string[]): Promise<void> {
    if (eventIds.length === 0) return;
    try {
      const rows = await this.db.outboxEvent.findMany({
        where: { eventId: { in: eventIds } },
        orderBy: { id: 'asc' },
      });
      for (const row of rows) await this.publish(row);
    } catch (error) {
      this.logger.warn(`outbox flush failed (${(error as Error).message}); the sweeper retries`);
    }
  }

  async sweep(): Promise<number> {
    if (this.sweeping) return 0;
    this.sweeping = true;
    try {
      const rows = await this.db.outboxEvent.findMany({
        where: { createdAt: { lt: new Date(Date.now() - SWEEP_MIN_AGE_MS) } },
        orderBy: { id: 'asc' },
        take: SWEEP_BATCH,
      });
      let published = 0;
      for (const row of rows) if (await this.publish(row)) published++;
      return published;
    } catch (error) {
      this.logger.warn(`outbox sweep failed: ${(error as Error).message}`);
      return 0;
    } finally {
      this.sweeping = false;
    }
  }

  private async publish(row: {
    id: number;
    eventId: string;
    subject: string;
    payload: unknown;
  }): Promise<boolean> {
    try {
      this.streamReady ??= ensureEventStream(this.nc, streamBudgetOf(this.env)).catch((error: unknown) => {
        this.streamReady = undefined;
        throw error;
      });
      await this.streamReady;
      await publishEvent(this.nc, row.subject, row.eventId, row.payload);
      await this.db.outboxEvent.deleteMany({ where: { id: row.id } });
      return true;
    } catch (error) {
      await this.db.outboxEvent
        .updateMany({ where: { id: row.id }, data: { attempts: { increment: 1 } } })
        .catch(() => undefined);
      this.logger.warn(
        `event ${row.eventId} not published yet (${(error as Error).message}); the sweeper retries it`,
      );
      return false;
    }
  }
}
