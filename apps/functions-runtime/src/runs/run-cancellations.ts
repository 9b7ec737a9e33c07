import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import {
  FUNCTIONS_SUBJECTS,
  functionRunCancelSchema,
  functionRunLeaseSchema,
  type FunctionRunLeaseReply,
} from '@switchboard/contracts';
import { listenBroadcast, NATS_CONNECTION } from '@switchboard/messaging';
import type { NatsConnection, Subscription } from 'nats';

interface RunningAttempt {
  attempt: number;
  stop(reason: string): void;
  /** Leased runs: the timer that stops the run when its lease is not renewed in time, and its length. */
  lease?: { ttlMs: number; timer: NodeJS.Timeout };
}

/**
 * The runs this replica is running, by invocation id, so `functions.v1.cancel` can stop one and
 * `functions.v1.lease` can keep one going. Every replica hears both broadcasts (no queue group: the
 * orchestrator does not know which one runs the script); the one running it acts, the others have nothing
 * to do. A stop is what the wall clock would do (`script_aborted`). The replica running a leased attempt
 * answers each renewal, so its caller learns when that replica is gone (no answer for the lease's length).
 */
@Injectable()
export class RunCancellations implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('RunCancellations');
  private readonly running = new Map<string, Set<RunningAttempt>>();
  private cancels: Subscription | undefined;
  private leases: Subscription | undefined;

  constructor(@Inject(NATS_CONNECTION) private readonly nc: NatsConnection) {}

  onModuleInit(): void {
    this.cancels = listenBroadcast(this.nc, FUNCTIONS_SUBJECTS.cancel, functionRunCancelSchema, (cancel) =>
      this.cancel(cancel.invocationId, cancel.attempt, cancel.reason),
    );
    this.leases = listenBroadcast(
      this.nc,
      FUNCTIONS_SUBJECTS.lease,
      functionRunLeaseSchema,
      (lease, respond) => {
        // Only the replica running the attempt answers; the others' silence is no news.
        if (this.renew(lease.invocationId, lease.attempt))
          respond({ ...lease, running: true } satisfies FunctionRunLeaseReply);
      },
    );
  }

  onApplicationShutdown(): void {
    this.cancels?.unsubscribe();
    this.leases?.unsubscribe();
    for (const attempts of this.running.values())
      for (const entry of attempts) clearTimeout(entry.lease?.timer);
  }

  /**
   * Registers a running attempt; the answer unregisters it (call it when the run is over). With `leaseTtlMs`
   * the attempt is stopped unless `functions.v1.lease` renews it at least that often, counted from now.
   */
  track(
    invocationId: string,
    attempt: number,
    stop: (reason: string) => void,
    leaseTtlMs?: number,
  ): () => void {
    const entry: RunningAttempt = { attempt, stop };
    if (leaseTtlMs !== undefined)
      entry.lease = { ttlMs: leaseTtlMs, timer: this.expiry(invocationId, entry, leaseTtlMs) };
    let attempts = this.running.get(invocationId);
    if (!attempts) this.running.set(invocationId, (attempts = new Set()));
    attempts.add(entry);
    return () => {
      clearTimeout(entry.lease?.timer);
      attempts.delete(entry);
      if (attempts.size === 0 && this.running.get(invocationId) === attempts)
        this.running.delete(invocationId);
    };
  }

  /** Its caller is alive: the attempt's lease starts again. Answers whether this replica runs the attempt. */
  renew(invocationId: string, attempt: number): boolean {
    let running = false;
    for (const entry of this.running.get(invocationId) ?? []) {
      if (entry.attempt !== attempt) continue;
      running = true;
      if (!entry.lease) continue;
      clearTimeout(entry.lease.timer);
      entry.lease.timer = this.expiry(invocationId, entry, entry.lease.ttlMs);
    }
    return running;
  }

  private expiry(invocationId: string, entry: RunningAttempt, ttlMs: number): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.logger.warn(
        `stopping ${invocationId} (attempt ${entry.attempt}): its lease was not renewed for ${ttlMs} ms`,
      );
      entry.stop(`the caller waiting for this attempt stopped renewing its lease (${ttlMs} ms): it is gone`);
    }, ttlMs);
    timer.unref();
    return timer;
  }

  /** Stops that attempt of the invocation (another one may be a retry that must go on). */
  cancel(invocationId: string, attempt: number, reason: string): void {
    for (const entry of this.running.get(invocationId) ?? []) {
      if (entry.attempt !== attempt) continue;
      this.logger.log(`stopping ${invocationId} (attempt ${entry.attempt}): ${reason}`);
      entry.stop(reason);
    }
  }
}
