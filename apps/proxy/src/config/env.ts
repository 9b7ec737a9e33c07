import { envFragments, parseEnv } from '@switchboard/config';
import { proxyEngineEnv } from '@switchboard/proxy-engine';
import { z } from 'zod';

export const envSchema = z
  .object({
    PORT: envFragments.port(3012),
    ...envFragments.nats,
    ...envFragments.logging,
    /** Spent gateway nonces, shared by the proxy's replicas. */
    ...envFragments.redis,
    /**
     * Shared with the gateway: it signs who is calling. When unset, both derive it from
     * SWITCHBOARD_MASTER_KEYS (single-host setups where every service gets the same environment).
     */
    SWITCHBOARD_INTERNAL_TOKEN: z.string().min(32, 'must be at least 32 characters').optional(),
    SWITCHBOARD_MASTER_KEYS: envFragments.masterKeys.SWITCHBOARD_MASTER_KEYS.optional(),
    ...proxyEngineEnv,
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
