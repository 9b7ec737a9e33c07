import { envFragments, parseEnv } from '@switchboard/config';
import { z } from 'zod';

const ms = (fallback: number, min = 0) => z.coerce.number().int().min(min).default(fallback);

export const envSchema = z
  .object({
    PORT: envFragments.port(3012),
    ...envFragments.nats,
    ...envFragments.logging,
    /**
     * Shared with the gateway: it signs who is calling. When unset, both derive it from
     * SWITCHBOARD_MASTER_KEYS (single-host setups where every service gets the same environment).
     */
    SWITCHBOARD_INTERNAL_TOKEN: z.string().min(32, 'must be at least 32 characters').optional(),
    SWITCHBOARD_MASTER_KEYS: envFragments.masterKeys.SWITCHBOARD_MASTER_KEYS.optional(),
    /** Comma list of host names, IPs or CIDRs the egress policy lets through although they are private. */
    SWITCHBOARD_EGRESS_ALLOW: z.string().default(''),
    SWITCHBOARD_PROXY_CONNECT_TIMEOUT_MS: ms(10_000, 1),
    /** Time to the provider's response headers, per attempt; a hung provider becomes a 504 after it. */
    SWITCHBOARD_PROXY_HEADERS_TIMEOUT_MS: ms(60_000, 1),
    /** Longest silence between two body chunks. */
    SWITCHBOARD_PROXY_BODY_TIMEOUT_MS: ms(60_000, 1),
    /** First back-off step; attempt n waits between half and all of base × 2^n (capped). */
    SWITCHBOARD_PROXY_RETRY_BASE_MS: ms(1_000),
    SWITCHBOARD_PROXY_RETRY_MAX_DELAY_MS: ms(30_000),
    /** A provider asking to wait longer than this (Retry-After, reset header) gets no retry: its answer is returned. */
    SWITCHBOARD_PROXY_MAX_RETRY_WAIT_MS: ms(60_000),
    SWITCHBOARD_PROXY_MAX_RETRIES: z.coerce.number().int().min(0).max(100).default(10),
    SWITCHBOARD_PROXY_MAX_REDIRECTS: z.coerce.number().int().min(0).max(20).default(5),
    /** Request bodies up to this size are held so a retry or a post-refresh retry can resend them. */
    SWITCHBOARD_PROXY_REPLAY_BUFFER_BYTES: z.coerce.number().int().min(0).default(1_048_576),
    SWITCHBOARD_PROXY_CREDENTIALS_TTL_MS: ms(5_000),
    SWITCHBOARD_PROXY_RATE_LIMIT_GOVERNANCE: envFragments.booleanish(true),
    /** Longest a call waits for a connection's provider rate limit to reset before it is answered 429. */
    SWITCHBOARD_PROXY_RATE_LIMIT_MAX_WAIT_MS: ms(30_000),
  })
  .superRefine((env, ctx) => {
    if (!env.SWITCHBOARD_INTERNAL_TOKEN && !env.SWITCHBOARD_MASTER_KEYS) {
      ctx.addIssue({
        code: 'custom',
        path: ['SWITCHBOARD_INTERNAL_TOKEN'],
        message: 'set SWITCHBOARD_INTERNAL_TOKEN (the same value as the gateway) or SWITCHBOARD_MASTER_KEYS',
      });
    }
  });
export type ProxyEnv = z.infer<typeof envSchema>;

export const PROXY_ENV = Symbol('PROXY_ENV');
export const loadEnv = (): ProxyEnv => parseEnv(envSchema);
