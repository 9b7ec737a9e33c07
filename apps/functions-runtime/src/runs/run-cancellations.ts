import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { FUNCTIONS_SUBJECTS, functionRunCancelSchema } from '@switchboard/contracts';
import { NATS_CONNECTION } from '@switchboard/messaging';
import type { NatsConnection, Subscription } from 'nats';

interface RunningAttempt {
  attempt: number;
  stop(reason: string): void;
}

/**
 * The runs this replica is running, by invocation id, so `functions.v1.cancel` can stop one. Every replica
 * hears the broadcast (no queue group: the orchestrator does not know which one runs the script); the one
 * running it stops it as its wall clock would (`script_aborted`), the others have nothing to do.
 */
@Injectable()
export class RunCancellations implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('RunCancellations');
  private readonly running = new Map<string, Set<RunningAttempt>>();
  private subscription: Subscription | undefined;

  constructor(@Inject(NATS_CONNECTION) private readonly nc: NatsConnection) {}

  onModuleInit(): void {
    this.subscription = this.nc.subscribe(FUNCTIONS_SUBJECTS.cancel, {
      callback: (error, message) => {
        if (error) return;
        let parsed;
        try {
          parsed = functionRunCancelSchema.safeParse(JSON.parse(Buffer.from(message.data).toString('utf8')));
        } catch {
          return;
        }
        if (parsed.success) this.cancel(parsed.data.invocationId, parsed.data.attempt, parsed.data.reason);
      },
    });
  }

  onApplicationShutdown(): void {
    this.subscription?.unsubscribe();
  }

  /** Registers a running attempt; the answer unregisters it (call it when the run is over). */
  track(invocationId: string, attempt: number, stop: (reason: string) => void): () => void {
    const entry: RunningAttempt = { attempt, stop };
    let attempts = this.running.get(invocationId);
    if (!attempts) this.running.set(invocationId, (attempts = new Set()));
    attempts.add(entry);
    return () => {
      attempts.delete(entry);
      if (attempts.size === 0 && this.running.get(invocationId) === attempts)
        this.running.delete(invocationId);
    };
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
