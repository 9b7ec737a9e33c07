import { envFragments, parseEnv } from '@switchboard/config';
import { z } from 'zod';

export const envSchema = z.object({
  PORT: envFragments.port(3013),
  ...envFragments.nats,
  ...envFragments.logging,
});
export type FunctionsRuntimeEnv = z.infer<typeof envSchema>;

export const loadEnv = (): FunctionsRuntimeEnv => parseEnv(envSchema);
