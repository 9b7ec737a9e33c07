import { Injectable } from '@nestjs/common';

export interface HealthCheckResult {
  ok: boolean;
  detail?: string;
}

export interface HealthCheck {
  name: string;
  /** Readiness-only checks do not make the liveness endpoint fail. */
  readinessOnly?: boolean;
  /**
   * A check of another service (the gateway lists every service): `GET /ready?scope=self` leaves it out,
   * so an orchestrator's readiness probe does not take every replica of this one out of rotation when a
   * service behind it is down (its routes answer 503 instead; the others keep working).
   */
  peer?: boolean;
  check(): Promise<HealthCheckResult>;
}

/** Feature modules register what their readiness depends on (database, Temporal, downstream services). */
@Injectable()
export class HealthRegistry {
  private readonly checks: HealthCheck[] = [];

  register(check: HealthCheck): void {
    this.checks.push(check);
  }

  async run(filter: (c: HealthCheck) => boolean = () => true, timeoutMs = 2000) {
    return Promise.all(
      this.checks.filter(filter).map(async (c) => {
        const result = await Promise.race([
          c.check().catch((e: unknown) => ({ ok: false, detail: (e as Error)?.message ?? 'failed' })),
          new Promise<HealthCheckResult>((resolve) =>
            setTimeout(() => resolve({ ok: false, detail: 'timed out' }), timeoutMs).unref(),
          ),
        ]);
        return { name: c.name, ...result };
      }),
    );
  }
}

/** Readiness check for a SQL database: one trivial query. */
export function databaseHealthCheck(ping: () => Promise<unknown>): HealthCheck {
  return {
    name: 'postgres',
    readinessOnly: true,
    check: async () => {
      await ping();
      return { ok: true };
    },
  };
}
