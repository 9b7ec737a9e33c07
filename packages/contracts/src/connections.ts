import { z } from 'zod';
import { natsRequest } from './nats-request';

/**
 * The headers naming the connection a client call acts on, lower-cased as Node delivers them: records,
 * actions, MCP and the proxy take them.
 */
export const connectionHeadersSchema = z.object({
  'connection-id': z.string().min(1).max(255),
  'provider-config-key': z.string().min(1).max(255),
});
export type ConnectionHeaders = z.infer<typeof connectionHeadersSchema>;

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

/** The vault's requests about an integration's connections. */
export const CONNECTION_REQUESTS = {
  countForIntegration: natsRequest({
    subject: CONNECTION_SUBJECTS.countForIntegration,
    request: integrationRefSchema,
    reply: z.number().int(),
  }),
  deleteForIntegration: natsRequest({
    subject: CONNECTION_SUBJECTS.deleteForIntegration,
    request: integrationRefSchema,
    reply: z.number().int(),
  }),
  idsForIntegration: natsRequest({
    subject: CONNECTION_SUBJECTS.idsForIntegration,
    request: connectionIdsRequestSchema,
    reply: z.array(z.string()),
  }),
};
