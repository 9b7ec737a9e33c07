import { envFragments } from '@switchboard/config';
import { z } from 'zod';

const ms = (fallback: number, min = 0) => z.coerce.number().int().min(min).default(fallback);

/**
 * The engine's variables, spread into the `config/env.ts` of every app that runs it (the proxy service,
 * the gateway in embedded mode), so both read the same names with the same defaults.
 */
export const proxyEngineEnv = {
  /** Comma list of host names, IPs or CIDRs the egress policy lets through although they are private. */
  SWITCHBOARD_EGRESS_ALLOW: z.string().default(''),
  /** The proxy's own list; when set (even empty) it replaces SWITCHBOARD_EGRESS_ALLOW for proxied calls. */
  SWITCHBOARD_PROXY_EGRESS_ALLOW: z.string().optional(),
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
};

export type ProxyEngineEnv = z.infer<z.ZodObject<typeof proxyEngineEnv>>;

/** Injection token of the parsed engine variables, as the app that registers the engine read them. */
export const PROXY_ENGINE_ENV = Symbol('PROXY_ENGINE_ENV');
