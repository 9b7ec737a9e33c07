import { envFragments, parseEnv } from '@switchboard/config';
import { z } from 'zod';

const ms = (fallback: number, min: number, max: number) =>
  z.coerce.number().int().min(min).max(max).default(fallback);

export const envSchema = z
  .object({
    PORT: envFragments.port(3011),
    ...envFragments.nats,
    ...envFragments.streams,
    ...envFragments.database,
    ...envFragments.logging,
    ...envFragments.masterKeys,
    // How long an import waits for the validate-connection scripts (plus a margin).
    ...envFragments.onEvent,
    /** An operator's provider catalog file (as auth-connect's): which connection-config fields are secret. */
    SWITCHBOARD_PROVIDERS_FILE: z.string().optional(),
    /**
     * How long the replica that won a connection's refresh lease may take before another replica may
     * take over (the holder died or hung). Must exceed the refresh timeout.
     */
    SWITCHBOARD_REFRESH_LEASE_MS: ms(30_000, 1_000, 600_000),
    /** How long the vault waits for auth-connect's token refresh (which itself bounds the provider call). */
    SWITCHBOARD_REFRESH_TIMEOUT_MS: ms(20_000, 500, 600_000),
    /** Tokens expiring within this window are refreshed before they are handed out (Nango: 15 minutes). */
    SWITCHBOARD_REFRESH_MARGIN_MS: ms(15 * 60_000, 0, 24 * 3_600_000),
    /** Back-off after the first failed refresh; doubles with each further failure up to the maximum. */
    SWITCHBOARD_REFRESH_BACKOFF_MS: ms(30_000, 0, 24 * 3_600_000),
    SWITCHBOARD_REFRESH_BACKOFF_MAX_MS: ms(3_600_000, 0, 7 * 24 * 3_600_000),
    /** How often a replica waiting for another replica's refresh looks at the row again. */
    SWITCHBOARD_REFRESH_POLL_MS: ms(100, 10, 5_000),
  })
  .refine((env) => env.SWITCHBOARD_REFRESH_LEASE_MS > env.SWITCHBOARD_REFRESH_TIMEOUT_MS, {
    message: 'must be larger than SWITCHBOARD_REFRESH_TIMEOUT_MS, or a slow refresh could outlive its lease',
    path: ['SWITCHBOARD_REFRESH_LEASE_MS'],
  });
export type VaultEnv = z.infer<typeof envSchema>;

export const VAULT_ENV = Symbol('VAULT_ENV');
export const loadEnv = (): VaultEnv => parseEnv(envSchema);
