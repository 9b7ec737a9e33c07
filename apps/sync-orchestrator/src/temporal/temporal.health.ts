import type { HealthCheck, HealthCheckResult } from '@switchboard/service-kit';
import { Connection, type ConnectionOptions } from '@temporalio/client';

/**
 * Readiness of the Temporal frontend: one `GetSystemInfo` call under a deadline shorter than the
 * registry's 2 s budget, so an unreachable server answers "not ready" with its gRPC error.
 *
 * It dials its own lazy connection without the SDK's retry interceptor: that interceptor retries
 * UNAVAILABLE with back-off sleeps that ignore the deadline (a refused port would answer after ~1.9 s,
 * as a generic timeout), and a retry left pending when the service closes its connection throws
 * "Channel has been shut down" out of a timer. One attempt answers in time, with the real reason.
 * Readiness-only: restarting this process does not bring Temporal back.
 */
export class TemporalHealthCheck implements HealthCheck {
  readonly name = 'temporal';
  readonly readinessOnly = true;
  private readonly connection: Connection;

  constructor(
    options: ConnectionOptions,
    private readonly timeoutMs = 1500,
  ) {
    this.connection = Connection.lazy({ ...options, interceptors: [] });
  }

  async check(): Promise<HealthCheckResult> {
    try {
      await this.connection.withDeadline(Date.now() + this.timeoutMs, () =>
        this.connection.workflowService.getSystemInfo({}),
      );
      return { ok: true };
    } catch (error) {
      return { ok: false, detail: (error as Error)?.message ?? String(error) };
    }
  }

  async close(): Promise<void> {
    await this.connection.close();
  }
}
