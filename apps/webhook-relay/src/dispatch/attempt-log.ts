import type { DeliveriesRepository } from './deliveries.repository';
import type { FirstAttempt } from './dispatcher';

const MAX_BATCH = 500;
/**
 * How long a write waits for company once the log is idle. Nobody waits on it but the event's JetStream
 * ack (the receiver already has the delivery), so a few milliseconds cost no latency anyone sees, and at
 * hundreds of events per second turn one statement (one commit) and one ack write per event into one per
 * handful. A relay killed meanwhile leaves the events unacknowledged: JetStream hands them out again.
 */
const LINGER_MS = 10;

/**
 * Stores first attempts in batches: whatever accumulated while the previous write ran (or, when idle,
 * within LINGER_MS) goes out in the next single statement, so under load the cost per attempt falls
 * instead of queueing one round trip each.
 */
export class AttemptLog {
  private queue: { rows: FirstAttempt[]; resolve: () => void; reject: (error: unknown) => void }[] = [];
  private queued = 0;
  private writing = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly repository: DeliveriesRepository) {}

  store(rows: FirstAttempt[]): Promise<void> {
    if (rows.length === 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.queue.push({ rows, resolve, reject });
      this.queued += rows.length;
      if (this.writing) return;
      if (this.queued >= MAX_BATCH) {
        clearTimeout(this.timer);
        this.timer = undefined;
        void this.flush();
      } else {
        this.timer ??= setTimeout(() => {
          this.timer = undefined;
          void this.flush();
        }, LINGER_MS);
      }
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
      this.queued -= size;
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
