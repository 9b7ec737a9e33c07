import type { DeliveriesRepository } from './deliveries.repository';
import type { FirstAttempt } from './dispatcher';

const MAX_BATCH = 500;

/**
 * Stores first attempts in batches: whatever accumulated while the previous write ran goes out in the
 * next single statement, so under load the cost per attempt falls instead of queueing one round trip
 * each, and when idle a lone attempt is written at once.
 */
export class AttemptLog {
  private queue: { rows: FirstAttempt[]; resolve: () => void; reject: (error: unknown) => void }[] = [];
  private writing = false;

  constructor(private readonly repository: DeliveriesRepository) {}

  store(rows: FirstAttempt[]): Promise<void> {
    if (rows.length === 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.queue.push({ rows, resolve, reject });
      if (!this.writing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.writing = true;
    while (this.queue.length > 0) {
      const batch: typeof this.queue = [];
      let size = 0;
      while (
        this.queue.length > 0 &&
        (batch.length === 0 || size + this.queue[0]!.rows.length <= MAX_BATCH)
      ) {
        const next = this.queue.shift()!;
        batch.push(next);
        size += next.rows.length;
      }
      try {
        await this.repository.insertAttempted(batch.flatMap((entry) => entry.rows));
        for (const entry of batch) entry.resolve();
      } catch (error) {
        for (const entry of batch) entry.reject(error);
      }
    }
    this.writing = false;
  }
}
