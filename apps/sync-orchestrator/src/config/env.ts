import { envFragments, parseEnv } from '@switchboard/config';
import { z } from 'zod';

export const envSchema = z.object({
  PORT: envFragments.port(3014),
  ...envFragments.nats,
  ...envFragments.database,
  /** The event stream's budget and copies: the same values as the vault's and the relay's. */
  ...envFragments.streams,
  ...envFragments.logging,
  /** The records store seals record payloads with these keys (the same keyring as the vault's). */
  ...envFragments.masterKeys,
  /** host:port of the Temporal frontend (gRPC). */
  TEMPORAL_ADDRESS: z
    .string()
    .regex(
      /^(\[[0-9A-Fa-f:.]+\]|[^\s:/[\]]+):\d{1,5}$/,
      'must be "host:port" (no scheme; IPv6 as [addr]:port)',
    )
    .default('127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  /** Shared by the service (which starts workflows) and temporal-worker.ts (which runs them); both must agree. */
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('switchboard-syncs'),
  /**
   * Longest one schedule operation (a few Temporal calls) may take before the request is answered 503
   * `service_unavailable`. Below the gateway's NATS request timeout (10 s), so the caller gets our answer
   * rather than the gateway's; a Temporal briefly slow under load still answers in time.
   */
  TEMPORAL_CALL_DEADLINE_MS: z.coerce.number().int().min(500).max(60_000).default(8_000),
  /** Longest a synchronous action may run (the runtime's wall-time limit for it), in ms. */
  SWITCHBOARD_ACTION_TIMEOUT_MS: z.coerce.number().int().min(1000).max(900_000).default(900_000),
  ...envFragments.onEvent,
  /** Longest a sync's onWebhook handler runs, in ms (Nango's webhook limit: 1 h). */
  SWITCHBOARD_WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(1000).max(3_600_000).default(3_600_000),
  /** Longest a sync run may take (Nango: 24 h), in ms; the runtime's wall-time limit for it. */
  SWITCHBOARD_SYNC_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(10_000)
    .max(7 * 24 * 3_600_000)
    .default(24 * 3_600_000),
  /**
   * A sync run's activity heartbeats while the script runs; a worker silent this long (killed, partitioned)
   * has its run retried elsewhere, resuming from the script's last checkpoint. It is also the script's
   * lease on functions-runtime (`functions.v1.lease`): not renewed this long, the script is stopped.
   */
  SWITCHBOARD_SYNC_HEARTBEAT_TIMEOUT_MS: z.coerce.number().int().min(2_000).max(600_000).default(30_000),
  /**
   * An action's or on-event script's lease on functions-runtime (`functions.v1.lease`, renewed every 2 s):
   * when the replica running the script has not confirmed it for this long (killed, partitioned), the
   * attempt ends as `function_runtime_lost` (an async action tries again per `X-Max-Retries`), and a script
   * whose caller stopped renewing is stopped. An async action's activity heartbeats with the same timeout.
   */
  SWITCHBOARD_ACTION_HEARTBEAT_TIMEOUT_MS: z.coerce.number().int().min(3_000).max(600_000).default(30_000),
  /**
   * Connections of the records store's own node-postgres pool (its writes and page reads bypass Prisma),
   * beside the Prisma client's pool; in the service and in temporal-worker.ts each.
   */
  SWITCHBOARD_RECORDS_DB_POOL_SIZE: z.coerce.number().int().min(1).max(100).default(5),
});
export type OrchestratorEnv = z.infer<typeof envSchema>;

export const ORCHESTRATOR_ENV = Symbol('ORCHESTRATOR_ENV');
export const loadEnv = (): OrchestratorEnv => parseEnv(envSchema);
