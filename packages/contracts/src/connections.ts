import { z } from 'zod';

/** Connections are owned by the vault; only what other services need today is here. */
export const CONNECTION_SUBJECTS = {
  countForIntegration: 'vault.v1.connections.count-for-integration',
  deleteForIntegration: 'vault.v1.connections.delete-for-integration',
  /** The connection ids of an integration (`connectionId` set: that one, if it exists); `string[]`. */
  idsForIntegration: 'vault.v1.connections.ids-for-integration',
} as const;

export const integrationRefSchema = z.object({
  environmentId: z.number().int(),
  providerConfigKey: z.string(),
});

export const connectionIdsRequestSchema = integrationRefSchema.extend({
  connectionId: z.string().optional(),
});
export type ConnectionIdsRequest = z.infer<typeof connectionIdsRequestSchema>;
