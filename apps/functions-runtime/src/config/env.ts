import { envFragments, parseEnv } from '@switchboard/config';
import { z } from 'zod';

const int = (min: number, fallback: number) => z.coerce.number().int().min(min).default(fallback);

export const envSchema = z
  .object({
    PORT: envFragments.port(3013),
    ...envFragments.nats,
    ...envFragments.logging,
    /** Where `nango.getWebhookURL()` points (`<server>/webhook/<environment uuid>/<integration>`). */
    SWITCHBOARD_SERVER_URL: envFragments.publicUrls.SWITCHBOARD_SERVER_URL,
    /**
     * The proxy service scripts' `nango.proxy()` calls go through (same engine, egress policy, retries and
     * rate-limit governance as `/proxy`), signed as the run's environment with the internal key below.
     */
    SWITCHBOARD_PROXY_URL: z.url().default('http://127.0.0.1:3012'),
    /** The key the proxy service checks callers with; or derived from the oldest master key when unset. */
    SWITCHBOARD_INTERNAL_TOKEN: z.string().min(32).optional(),
    SWITCHBOARD_MASTER_KEYS: envFragments.masterKeys.SWITCHBOARD_MASTER_KEYS.optional(),
    /**
     * Egress exceptions of `nango.uncontrolledFetch` (a script's own requests, without connection
     * credentials): when unset, the shared `SWITCHBOARD_EGRESS_ALLOW`; only public addresses otherwise.
     */
    SWITCHBOARD_FUNCTIONS_EGRESS_ALLOW: z.string().optional(),
    SWITCHBOARD_EGRESS_ALLOW: z.string().default(''),

    // ---- per-run limits (a request may ask for less, never for more) ----
    /** V8 heap of one run's isolate, MB (isolated-vm's own default; min 8). */
    FUNCTIONS_MEMORY_LIMIT_MB: int(8, 128),
    /**
     * CPU time an action or on-event run may burn inside its isolate (host calls such as proxy waits are
     * not counted).
     */
    FUNCTIONS_CPU_LIMIT_MS: int(1, 60_000),
    /**
     * The same for a sync run, which may page through millions of records in its 24 h (Nango has only the
     * wall limit); still bounded, so a runaway loop does not hold a core for a day.
     */
    FUNCTIONS_SYNC_CPU_LIMIT_MS: int(1, 60 * 60_000),
    /** Wall clock of an action run (Nango: 15 min). */
    FUNCTIONS_ACTION_WALL_LIMIT_MS: int(1, 15 * 60_000),
    /** Wall clock of an on-event run (5 min). */
    FUNCTIONS_ON_EVENT_WALL_LIMIT_MS: int(1, 5 * 60_000),
    /** Wall clock of a sync run (Nango: 24 h). */
    FUNCTIONS_SYNC_WALL_LIMIT_MS: int(1, 24 * 60 * 60_000),
    /**
     * At the wall clock `nango.abortSignal` fires and provider calls stop; the script then has this long to
     * wind down (save a checkpoint, log) before its isolate is disposed. The run still ends in script_timeout.
     */
    FUNCTIONS_ABORT_GRACE_MS: int(0, 2_000),
    /** Largest output a run may return, in bytes of JSON. */
    FUNCTIONS_OUTPUT_LIMIT_BYTES: int(1, 10 * 1024 * 1024),
    /** Outputs up to this many bytes travel inline in the reply; larger ones go to the object store. */
    FUNCTIONS_INLINE_OUTPUT_BYTES: int(1, 512 * 1024),
    /** Log lines kept per run (`nango.log` and `console.*`); the rest are counted in `logsDropped`. */
    FUNCTIONS_LOG_LINES_LIMIT: int(1, 1000),
    /** Characters kept of one log line. */
    FUNCTIONS_LOG_LINE_CHARS: int(64, 8192),
    /**
     * Characters of log text kept per run, all lines together: logs travel in the NATS reply (1 MiB by
     * default) beside an inline output of up to FUNCTIONS_INLINE_OUTPUT_BYTES.
     */
    FUNCTIONS_LOG_TOTAL_CHARS: int(1024, 256 * 1024),
    /** Largest provider answer a script may receive from `nango.proxy()`, in bytes. */
    FUNCTIONS_PROXY_RESPONSE_LIMIT_BYTES: int(1, 10 * 1024 * 1024),
    /** Runs executed at once by one process; more wait for a free slot. */
    FUNCTIONS_MAX_CONCURRENT_RUNS: int(1, 8),
    /**
     * Isolates made ahead of need (each still used for one run only): takes the isolate's start off a
     * run's critical path. 0 makes every isolate when its run starts.
     */
    FUNCTIONS_SPARE_ISOLATES: int(0, 2),
    /**
     * Idle isolates kept to serve later runs of the same environment and function version, each run in a
     * new context (README, "Isolates"). 0 disposes of every isolate after its run.
     */
    FUNCTIONS_POOLED_ISOLATES: int(0, 16),
    /**
     * Make the next run's context while a pooled isolate waits (README, "Isolates", ready contexts): the
     * library, prelude and bundle top level are evaluated off the run's path. false makes it on the path.
     */
    FUNCTIONS_READY_CONTEXTS: envFragments.booleanish(true),
  })
  .superRefine((env, ctx) => {
    if (!env.SWITCHBOARD_INTERNAL_TOKEN && !env.SWITCHBOARD_MASTER_KEYS) {
      ctx.addIssue({
        code: 'custom',
        path: ['SWITCHBOARD_INTERNAL_TOKEN'],
        message: "set SWITCHBOARD_INTERNAL_TOKEN (the proxy service's value) or SWITCHBOARD_MASTER_KEYS",
      });
    }
  });
export type FunctionsRuntimeEnv = z.infer<typeof envSchema>;

export const FUNCTIONS_RUNTIME_ENV = Symbol('FUNCTIONS_RUNTIME_ENV');

export const loadEnv = (): FunctionsRuntimeEnv => parseEnv(envSchema);
