import { envFragments, parseEnv } from '@switchboard/config';
import { proxyEngineEnv } from '@switchboard/proxy-engine';
import { isIP } from 'node:net';
import { z } from 'zod';

/**
 * Which `X-Forwarded-For` hops the gateway believes (the client address rate limits count by): `false`
 * (none: the socket's peer is the client), a hop count (`1` = one load balancer in front), or a comma list of
 * the proxies' IPs/CIDRs. Anything else fails the boot.
 */
const trustProxySchema = z
  .string()
  .trim()
  .default('false')
  .transform((value, ctx): false | number | string[] => {
    if (value === '' || value === 'false' || value === '0') return false;
    if (/^\d{1,2}$/.test(value)) return Number(value);
    const entries = value.split(',').map((entry) => entry.trim());
    for (const entry of entries) {
      const [address, bits, ...rest] = entry.split('/');
      const family = isIP(address ?? '');
      const prefix = bits === undefined ? undefined : Number(bits);
      const valid =
        family !== 0 &&
        rest.length === 0 &&
        (prefix === undefined ||
          (Number.isInteger(prefix) && prefix >= 0 && prefix <= (family === 4 ? 32 : 128)));
      if (!valid) {
        ctx.addIssue({
          code: 'custom',
          message: `"${entry}" is not an IP or CIDR; use false, a hop count, or proxy IPs/CIDRs`,
        });
        return z.NEVER;
      }
    }
    return entries;
  });

export const envSchema = z
  .object({
    PORT: envFragments.port(3003),
    HOST: z.string().default('0.0.0.0'),
    ...envFragments.nats,
    ...envFragments.redis,
    ...envFragments.logging,
    ...envFragments.publicUrls,
    ...envFragments.jsonDepth,
    /**
     * Which proxies in front of the gateway may name the client in `X-Forwarded-For` (default none: a
     * client could otherwise pick any address and escape every per-address limit). `1` for one load
     * balancer, or its IPs/CIDRs (`10.0.0.0/8,fd00::/8`).
     */
    SWITCHBOARD_TRUST_PROXY: trustProxySchema,
    /** Requests per account per fixed 60-second window, shared by every gateway replica (Redis). */
    SWITCHBOARD_RATE_LIMIT_PER_MIN: z.coerce.number().int().min(1).max(1_000_000).default(1000),
    /**
     * Requests per connect session per 60-second window. A session token lives in an end user's browser,
     * so it has a window of its own: it can never spend the account's (and 429 the customer's backend).
     */
    SWITCHBOARD_SESSION_RATE_LIMIT_PER_MIN: z.coerce.number().int().min(1).max(1_000_000).default(300),
    /** Console sign-in attempts per email per 60-second window (right or wrong), across replicas. */
    SWITCHBOARD_CONSOLE_SIGN_IN_PER_EMAIL_PER_MIN: z.coerce.number().int().min(1).max(10_000).default(10),
    /** Console sign-in attempts per client address per 60-second window. */
    SWITCHBOARD_CONSOLE_SIGN_IN_PER_IP_PER_MIN: z.coerce.number().int().min(1).max(100_000).default(30),
    /**
     * Provider webhooks (`POST /webhook/…`, public) per sender address and per environment per 60 s window.
     * A provider sends from few addresses for all of its customers, so the address limit is generous.
     */
    SWITCHBOARD_WEBHOOK_RATE_LIMIT_PER_IP_PER_MIN: z.coerce
      .number()
      .int()
      .min(1)
      .max(1_000_000)
      .default(3000),
    SWITCHBOARD_WEBHOOK_RATE_LIMIT_PER_ENV_PER_MIN: z.coerce
      .number()
      .int()
      .min(1)
      .max(1_000_000)
      .default(6000),
    /**
     * Largest share of the window's allowance one replica takes from Redis at a time (spent locally, so most
     * requests cost no Redis round trip). Limits under 1 / fraction stay exact; 0 asks Redis on every request.
     */
    SWITCHBOARD_RATE_LIMIT_LEASE_FRACTION: z.coerce.number().min(0).max(0.1).default(0.005),
    /** Largest JSON body accepted on the management API, in bytes (the proxy streams and has its own limit). */
    SWITCHBOARD_BODY_LIMIT_BYTES: z.coerce.number().int().min(1024).default(1_048_576),
    /** How long a verified key is trusted before it is checked again (revocation delay), in ms. */
    SWITCHBOARD_KEY_CACHE_TTL_MS: z.coerce.number().int().min(0).max(60_000).default(5_000),
    NATS_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
    /**
     * Largest JSON body of `POST /sync/deploy(/confirmation)`: compiled bundles with inline source maps, in
     * bytes. One `nango deploy` carries the whole project: ~35 integrations and ~1,700 functions are ~35 MB.
     */
    SWITCHBOARD_DEPLOY_BODY_LIMIT_BYTES: z.coerce
      .number()
      .int()
      .min(1024)
      .default(64 * 1_048_576),
    /**
     * How long `POST /sync/deploy(/confirmation)` waits for the orchestrator to plan or store a project, in ms:
     * a ~1,700-function project takes well over a minute on a busy two-core host.
     */
    SWITCHBOARD_DEPLOY_TIMEOUT_MS: z.coerce.number().int().min(1000).default(300_000),
    /** How long a synchronous `POST /action/trigger` waits for the script (the orchestrator's limit, same name), in ms. */
    SWITCHBOARD_ACTION_TIMEOUT_MS: z.coerce.number().int().min(1000).max(900_000).default(900_000),
    /**
     * `embedded`: `/proxy/*` runs the forwarding engine in this process (one hop fewer). `remote`: it is
     * streamed to the proxy service at SWITCHBOARD_PROXY_URL, which then scales on its own.
     */
    SWITCHBOARD_PROXY_MODE: z.enum(['embedded', 'remote']).default('embedded'),
    /**
     * `embedded`: `POST /webhook/*` verifies the provider's signature and stores the webhook on JetStream in
     * this process (refusals go to the relay to be logged). `remote`: every webhook is sent to the webhook
     * relay over NATS, which does the same.
     */
    SWITCHBOARD_WEBHOOK_INGRESS_MODE: z.enum(['embedded', 'remote']).default('embedded'),
    /** Remote mode (required there): the proxy service `/proxy/*` is streamed to. */
    SWITCHBOARD_PROXY_URL: z.url().optional(),
    /** Remote mode: signs the caller for the proxy service (same value there); derived from the master keys when unset. */
    SWITCHBOARD_INTERNAL_TOKEN: z.string().min(32, 'must be at least 32 characters').optional(),
    SWITCHBOARD_MASTER_KEYS: envFragments.masterKeys.SWITCHBOARD_MASTER_KEYS.optional(),
    /**
     * The console's built files (`apps/console/dist`), served at `/console`; unset: the
     * `@switchboard/console` package's own `dist` next to this gateway.
     */
    SWITCHBOARD_CONSOLE_DIR: z.string().min(1).optional(),
    /**
     * A trace UI's address for one trace, `{trace_id}` standing for the id (e.g.
     * `https://jaeger.example.com/trace/{trace_id}`): the console links an answer's trace there.
     */
    SWITCHBOARD_CONSOLE_TRACE_URL: z
      .url({ protocol: /^https?$/ })
      .refine(
        (url) => url.includes('{trace_id}') || url.includes('%7Btrace_id%7D'),
        'must contain {trace_id}',
      )
      .optional(),
    /** Embedded mode: timeouts, retries, egress allow-list, … with the proxy service's names and defaults. */
    ...proxyEngineEnv,
  })
  .superRefine((env, ctx) => {
    // A remote-mode gateway that cannot reach or sign for the proxy service could only answer /proxy with errors.
    if (env.SWITCHBOARD_PROXY_MODE !== 'remote') return;
    if (!env.SWITCHBOARD_PROXY_URL) {
      ctx.addIssue({
        code: 'custom',
        path: ['SWITCHBOARD_PROXY_URL'],
        message: 'required when SWITCHBOARD_PROXY_MODE=remote (the proxy service, e.g. http://proxy:3012)',
      });
    }
    if (!env.SWITCHBOARD_INTERNAL_TOKEN && !env.SWITCHBOARD_MASTER_KEYS) {
      ctx.addIssue({
        code: 'custom',
        path: ['SWITCHBOARD_INTERNAL_TOKEN'],
        message:
          'required when SWITCHBOARD_PROXY_MODE=remote: the same value as the proxy service (or SWITCHBOARD_MASTER_KEYS to derive it)',
      });
    }
  });
export type GatewayEnv = z.infer<typeof envSchema>;

export const GATEWAY_ENV = Symbol('GATEWAY_ENV');
export const loadEnv = (): GatewayEnv => parseEnv(envSchema);
