import { z } from 'zod';

/** Connections are owned by the vault; only what other services need today is here. */
export const CONNECTION_SUBJECTS = {
  countForIntegration: 'vault.v1.connections.count-for-integration',
  deleteForIntegration: 'vault.v1.connections.delete-for-integration',
} as const;

export const integrationRefSchema = z.object({
  environmentId: z.number().int(),
  providerConfigKey: z.string(),
});
