import { envFragments, parseEnv } from '@switchboard/config';
import { z } from 'zod';
import { parseDuration, parseRetrySchedule } from '../dispatch/retry-schedule';

const duration = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((value, ctx) => {
      const parsed = parseDuration(value);
      if (parsed === undefined) {
        ctx.addIssue({ code: 'custom', message: `"${value}" is not a duration (e.g. 500ms, 5s, 2h)` });
        return z.NEVER;
      }
      return parsed;
    });
const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);

export const envSchema = z.object({
  PORT: envFragments.port(3015),
  ...envFragments.nats,
  ...envFragments.streams,
  ...envFragments.database,
  ...envFragments.logging,
  ...envFragments.publicUrls,
  ...envFragments.masterKeys,
  ...envFragments.jsonDepth,
  /** An operator's YAML file of extra or replaced providers (same schema as the built-in catalog). */
  SWITCHBOARD_PROVIDERS_FILE: z.string().optional(),
  /**
   * Delay before each attempt, comma-separated (`ms` durations). Svix's shape by default: at once, then
   * 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. Tests compress it (e.g. `0,50ms,3s,18s`).
   */
  SWITCHBOARD_WEBHOOK_RETRY_SCHEDULE: z
    .string()
    .default('0,5s,5m,30m,2h,5h,10h,10h')
    .transform((value, ctx) => {
      const parsed = parseRetrySchedule(value);
      if (typeof parsed === 'string') {
        ctx.addIssue({ code: 'custom', message: parsed });
        return z.NEVER;
      }
      return parsed;
    }),
  /** One attempt's budget, connect to last response byte. */
  SWITCHBOARD_WEBHOOK_TIMEOUT: duration('15s'),
  /** Attempts in flight per relay process, and per destination URL (one slow endpoint never takes them all). */
  SWITCHBOARD_WEBHOOK_CONCURRENCY: positiveInt(64),
  SWITCHBOARD_WEBHOOK_ENDPOINT_CONCURRENCY: positiveInt(16),
  /** How often due retries are looked for while there are some (the shortest wait between two looks). */
  SWITCHBOARD_WEBHOOK_POLL_INTERVAL: duration('500ms'),
  /**
   * The longest wait between two looks when nothing is due (the relay sleeps until its own next retry; a
   * retry stored by another replica is picked up within this time).
   */
  SWITCHBOARD_WEBHOOK_IDLE_POLL_INTERVAL: duration('5s'),
  /**
   * How long the orchestrator's answer to "which webhook types do this integration's syncs subscribe to"
   * is reused. A deploy or a deleted function drops it at once (`orchestrator.v1.functions.changed`); this
   * bounds how stale it can be when that announcement is missed.
   */
  SWITCHBOARD_WEBHOOK_SUBSCRIPTIONS_CACHE: duration('5s'),
  /** JetStream redelivers an event this long after a relay took it without acknowledging it. */
  SWITCHBOARD_WEBHOOK_ACK_WAIT: duration('30s'),
  /**
   * How many times JetStream hands out one event before it is dead-lettered (`max_deliver`). A failure to
   * plan an event (Postgres or NATS down) is retried with a backoff of 1 s doubling to 5 min, so the
   * default 40 tries last about 2.5 hours. Failed sends to the customer are not counted here: they are
   * stored deliveries retried on `SWITCHBOARD_WEBHOOK_RETRY_SCHEDULE`.
   */
  SWITCHBOARD_EVENT_MAX_DELIVER: z.coerce.number().int().min(2).max(1000).default(40),
  /** Circuit breaker per destination: this many failures within the window open it for the cooldown. */
  SWITCHBOARD_WEBHOOK_BREAKER_FAILURES: positiveInt(5),
  SWITCHBOARD_WEBHOOK_BREAKER_WINDOW: duration('10s'),
  SWITCHBOARD_WEBHOOK_BREAKER_COOLDOWN: duration('60s'),
  /** After a rotation the previous signing key keeps signing (in `webhook-signature`) this long. */
  SWITCHBOARD_WEBHOOK_SIGNING_KEY_GRACE: duration('24h'),
  /** Delivered and failed deliveries are removed from the log after this long. */
  SWITCHBOARD_WEBHOOK_LOG_RETENTION: duration('30d'),
  /**
   * Comma list of fully qualified host names, IPs or CIDRs a webhook URL may reach although the egress
   * policy blocks private, loopback and link-local addresses (e.g. `10.0.0.0/8` for a receiver inside
   * your network; tests use `127.0.0.1`). The same variable as the proxy's.
   */
  SWITCHBOARD_EGRESS_ALLOW: z.string().default(''),
  /** Deprecated alias of SWITCHBOARD_EGRESS_ALLOW (its entries are added to it); still set by bench/webhooks. */
  SWITCHBOARD_EGRESS_ALLOWED_CIDRS: z.string().default(''),
  /** Webhook deliveries' own list; when set (even empty) it replaces the two above for customer URLs. */
  SWITCHBOARD_WEBHOOK_EGRESS_ALLOW: z.string().optional(),
});
export type WebhookRelayEnv = z.infer<typeof envSchema>;

export const WEBHOOK_RELAY_ENV = Symbol('WEBHOOK_RELAY_ENV');
export const loadEnv = (): WebhookRelayEnv => parseEnv(envSchema);
