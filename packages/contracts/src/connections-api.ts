import { z } from 'zod';
import { callerSchema } from './context';
import { endUserSchema } from './events';
import { uniqueKeySchema } from './integrations';
import { natsRequest, successReplySchema } from './nats-request';

/**
 * The public connections API (Nango-compatible): what the gateway validates and what it asks the vault
 * over NATS. Shapes follow `@nangohq/node` 0.71.x; where a name could clash with another area's export it
 * carries a `connection` prefix.
 */
export const CONNECTIONS_API_SUBJECTS = {
  list: 'vault.v1.connections.list',
  get: 'vault.v1.connection.get',
  patch: 'vault.v1.connection.patch',
  delete: 'vault.v1.connection.delete',
  import: 'vault.v1.connection.import',
  setMetadata: 'vault.v1.connections.metadata.set',
  updateMetadata: 'vault.v1.connections.metadata.update',
} as const;

/** Nango's connection id alphabet (people store e-mails and JSON-ish strings in it). */
export const connectionIdSchema = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[a-zA-Z0-9,.;:=+~[\]|@${}"'\\/_ -]+$/, 'has a character a connection id may not hold');

/** Query booleans as Nango parses them (`true/false/1/0/yes/no/on/off`). */
export const queryBooleanSchema = z.stringbool({
  truthy: ['true', '1', 'yes', 'on'],
  falsy: ['false', '0', 'no', 'off'],
  case: 'insensitive',
});

const queryInt = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d{1,9}$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

const TAG_KEY = /^[a-zA-Z][a-zA-Z0-9_\-./]*$/;

/**
 * Connection tags as stored: at most 10, keys lower-cased (so two keys differing only by case clash),
 * values 1..255 characters.
 */
export const connectionTagsInputSchema = z
  .record(
    z
      .string()
      .min(1)
      .max(64)
      .regex(TAG_KEY, 'must start with a letter and hold only letters, digits, _ - . /'),
    z.string().min(1).max(255),
  )
  .superRefine((tags, ctx) => {
    const keys = Object.keys(tags);
    if (keys.length > 10) ctx.addIssue({ code: 'custom', message: 'at most 10 tags', path: [] });
    const seen = new Set<string>();
    for (const key of keys) {
      const lower = key.toLowerCase();
      if (seen.has(lower))
        ctx.addIssue({
          code: 'custom',
          message: `duplicate tag key "${lower}" (keys are case-insensitive)`,
          path: [key],
        });
      seen.add(lower);
    }
  })
  .transform((tags) => Object.fromEntries(Object.entries(tags).map(([k, v]) => [k.toLowerCase(), v])));
export type ConnectionTags = Record<string, string>;

/** The end user a connection belongs to, as a caller sends it (`EndUserInput`, organization tolerated). */
export const connectionEndUserInputSchema = z
  .object({
    id: z.string().min(1).max(255),
    email: z.email().min(5).max(255).optional(),
    display_name: z.string().max(255).optional(),
    tags: z.record(z.string().min(1).max(64), z.string().max(255)).optional(),
    organization: z
      .object({ id: z.string().min(1).max(255), display_name: z.string().max(255).optional() })
      .strict()
      .optional(),
  })
  .strict();
export type ConnectionEndUserInput = z.infer<typeof connectionEndUserInputSchema>;

/** A webhook URL override; the empty string clears it. */
export const webhookUrlOverrideSchema = z.union([z.literal(''), z.url({ protocol: /^https?$/ }).max(2048)]);

const isoDateTime = z.iso.datetime({ offset: true });
const configOverrideSchema = z
  .object({ client_id: z.string().max(255).optional(), client_secret: z.string().max(4096).optional() })
  .strict();
const rawSchema = z.record(z.string(), z.unknown());
const secret = z.string().min(1).max(16_384);

/** Credentials a caller may import, one shape per auth mode (as `PostPublicConnection`). */
export const importCredentialsSchema = z.discriminatedUnion('type', [
  z
    .object({
      type: z.literal('OAUTH2'),
      access_token: secret,
      refresh_token: secret.optional(),
      expires_at: isoDateTime.optional(),
      config_override: configOverrideSchema.optional(),
      raw: rawSchema.optional(),
    })
    .strict(),
  z
    .object({
      type: z.literal('OAUTH2_CC'),
      token: secret,
      expires_at: isoDateTime.optional(),
      client_id: z.string().min(1).max(255),
      client_secret: secret,
      client_certificate: secret.optional(),
      client_private_key: secret.optional(),
      raw: rawSchema.optional(),
    })
    .strict(),
  z
    .object({
      type: z.literal('OAUTH1'),
      oauth_token: secret,
      oauth_token_secret: secret,
      raw: rawSchema.optional(),
    })
    .strict(),
  z.object({ type: z.literal('API_KEY'), apiKey: secret }).strict(),
  z
    .object({ type: z.literal('BASIC'), username: z.string().max(1024), password: z.string().max(16_384) })
    .strict(),
  z
    .object({
      type: z.literal('TBA'),
      token_id: secret,
      token_secret: secret,
      config_override: configOverrideSchema.optional(),
    })
    .strict(),
  z
    .object({
      type: z.literal('APP'),
      app_id: z.string().min(1).max(255),
      installation_id: z.string().min(1).max(255),
    })
    .strict(),
  z
    .object({
      type: z.literal('CUSTOM'),
      app_id: z.string().min(1).max(255),
      installation_id: z.string().min(1).max(255),
    })
    .strict(),
  z.object({ type: z.literal('NONE') }).strict(),
]);
export type ImportCredentials = z.infer<typeof importCredentialsSchema>;

const jsonObject = z.record(z.string().max(255), z.unknown());

export const importConnectionBodySchema = z
  .object({
    provider_config_key: uniqueKeySchema,
    connection_id: connectionIdSchema.optional(),
    credentials: importCredentialsSchema,
    metadata: jsonObject.optional(),
    connection_config: jsonObject.optional(),
    webhook_url_override: webhookUrlOverrideSchema.optional(),
    end_user: connectionEndUserInputSchema.optional(),
    tags: connectionTagsInputSchema.optional(),
  })
  .strict()
  .meta({ id: 'ImportConnectionBody' });
export type ImportConnectionBody = z.infer<typeof importConnectionBodySchema>;

export const patchConnectionBodySchema = z
  .object({
    end_user: connectionEndUserInputSchema.optional(),
    tags: connectionTagsInputSchema.optional(),
    webhook_url_override: webhookUrlOverrideSchema.optional(),
  })
  .strict()
  .meta({ id: 'PatchConnectionBody' });
export type PatchConnectionBody = z.infer<typeof patchConnectionBodySchema>;

export const connectionMetadataBodySchema = z
  .object({
    connection_id: z.union([connectionIdSchema, z.array(connectionIdSchema).min(1).max(1000)]),
    provider_config_key: uniqueKeySchema,
    metadata: jsonObject,
  })
  .strict()
  .meta({ id: 'ConnectionMetadataBody' });
export type ConnectionMetadataBody = z.infer<typeof connectionMetadataBodySchema>;

/** `integrationId` is a comma list (the client joins an array with ','); repeated keys are accepted too. */
const integrationIdsSchema = z
  .union([z.string().max(4096), z.array(z.string().max(4096)).max(100)])
  .transform((v) =>
    (Array.isArray(v) ? v : [v])
      .flatMap((s) => s.split(','))
      .map((s) => s.trim())
      .filter(Boolean),
  )
  .pipe(z.array(uniqueKeySchema).max(100));

export const listConnectionsQuerySchema = z
  .object({
    connectionId: z.string().min(1).max(255).optional(),
    search: z.string().min(1).max(255).optional(),
    endUserId: z.string().min(1).max(255).optional(),
    endUserOrganizationId: z.string().min(1).max(255).optional(),
    integrationId: integrationIdsSchema.optional(),
    /** `tags[key]=value`: every given tag must match (keys compared lower-cased, as they are stored). */
    tags: z
      .record(z.string().min(1).max(64), z.string().max(255))
      .transform((tags) => Object.fromEntries(Object.entries(tags).map(([k, v]) => [k.toLowerCase(), v])))
      .optional(),
    limit: queryInt(1, 2000).optional(),
    page: queryInt(0, 1_000_000).optional(),
  })
  .strict();

export const getConnectionQuerySchema = z
  .object({
    provider_config_key: uniqueKeySchema,
    force_refresh: queryBooleanSchema.optional(),
    refresh_token: queryBooleanSchema.optional(),
    refresh_github_app_jwt_token: queryBooleanSchema.optional(),
  })
  .strict();

export const connectionKeyQuerySchema = z.object({ provider_config_key: uniqueKeySchema }).strict();
export const connectionParamsSchema = z.object({ connectionId: connectionIdSchema });

// ---- responses ----

export const connectionErrorSchema = z.object({ type: z.enum(['auth', 'sync']), log_id: z.string() });
export type ConnectionError = z.infer<typeof connectionErrorSchema>;

export const apiEndUserSchema = endUserSchema.meta({ id: 'EndUser' });

export const apiPublicConnectionSchema = z
  .object({
    id: z.number().int(),
    connection_id: z.string(),
    provider_config_key: z.string(),
    provider: z.string(),
    errors: z.array(connectionErrorSchema),
    end_user: apiEndUserSchema.nullable(),
    tags: z.record(z.string(), z.string()),
    metadata: z.record(z.string(), z.unknown()).nullable(),
    /** `2024-01-01T10:00:00.000+00:00` */
    created: z.string(),
  })
  .meta({ id: 'Connection' });
export type ApiPublicConnection = z.infer<typeof apiPublicConnectionSchema>;

export const apiPublicConnectionFullSchema = z
  .object({
    id: z.number().int(),
    connection_id: z.string(),
    provider_config_key: z.string(),
    provider: z.string(),
    errors: z.array(connectionErrorSchema),
    end_user: apiEndUserSchema.nullable(),
    tags: z.record(z.string(), z.string()),
    metadata: z.record(z.string(), z.unknown()).nullable(),
    connection_config: z.record(z.string(), z.unknown()),
    webhook_url_override: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
    last_fetched_at: z.string().nullable(),
    /** `{}` unless the key holds `environment:connections:read_credentials`. */
    credentials: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'ConnectionFull' });
export type ApiPublicConnectionFull = z.infer<typeof apiPublicConnectionFullSchema>;

export const listConnectionsResponseSchema = z.object({ connections: z.array(apiPublicConnectionSchema) });

// ---- NATS requests (gateway → vault) ----

export const listConnectionsRequestSchema = z.object({
  caller: callerSchema,
  filters: z.object({
    connectionId: z.string().optional(),
    search: z.string().optional(),
    endUserId: z.string().optional(),
    endUserOrganizationId: z.string().optional(),
    integrationIds: z.array(z.string()).optional(),
    tags: z.record(z.string(), z.string()).optional(),
    limit: z.number().int().min(1).max(10_000),
    page: z.number().int().min(0),
  }),
});
export type ListConnectionsRequest = z.infer<typeof listConnectionsRequestSchema>;

export const getConnectionRequestSchema = z.object({
  caller: callerSchema,
  connectionId: z.string(),
  providerConfigKey: z.string(),
  includeCredentials: z.boolean(),
  includeRefreshToken: z.boolean(),
  forceRefresh: z.boolean(),
  refreshGithubAppJwtToken: z.boolean(),
});
export type GetConnectionRequest = z.infer<typeof getConnectionRequestSchema>;

export const patchConnectionRequestSchema = z.object({
  caller: callerSchema,
  connectionId: z.string(),
  providerConfigKey: z.string(),
  body: patchConnectionBodySchema,
});
export type PatchConnectionRequest = z.infer<typeof patchConnectionRequestSchema>;

export const deleteConnectionRequestSchema = z.object({
  caller: callerSchema,
  connectionId: z.string(),
  providerConfigKey: z.string(),
});
export type DeleteConnectionRequest = z.infer<typeof deleteConnectionRequestSchema>;

export const importConnectionRequestSchema = z.object({
  caller: callerSchema,
  body: importConnectionBodySchema,
  /** Whether the answer may show the stored credentials (the key holds `connections:read_credentials`). */
  includeCredentials: z.boolean(),
});
export type ImportConnectionRequest = z.infer<typeof importConnectionRequestSchema>;

export const connectionMetadataRequestSchema = z.object({
  caller: callerSchema,
  body: connectionMetadataBodySchema,
});
export type ConnectionMetadataRequest = z.infer<typeof connectionMetadataRequestSchema>;

/** The public connections API's requests (gateway and functions-runtime → vault). */
export const CONNECTIONS_API_REQUESTS = {
  list: natsRequest({
    subject: CONNECTIONS_API_SUBJECTS.list,
    request: listConnectionsRequestSchema,
    reply: listConnectionsResponseSchema,
  }),
  get: natsRequest({
    subject: CONNECTIONS_API_SUBJECTS.get,
    request: getConnectionRequestSchema,
    reply: apiPublicConnectionFullSchema,
  }),
  patch: natsRequest({
    subject: CONNECTIONS_API_SUBJECTS.patch,
    request: patchConnectionRequestSchema,
    reply: successReplySchema,
  }),
  delete: natsRequest({
    subject: CONNECTIONS_API_SUBJECTS.delete,
    request: deleteConnectionRequestSchema,
    reply: successReplySchema,
  }),
  import: natsRequest({
    subject: CONNECTIONS_API_SUBJECTS.import,
    request: importConnectionRequestSchema,
    reply: apiPublicConnectionFullSchema,
  }),
  setMetadata: natsRequest({
    subject: CONNECTIONS_API_SUBJECTS.setMetadata,
    request: connectionMetadataRequestSchema,
    reply: successReplySchema,
  }),
  updateMetadata: natsRequest({
    subject: CONNECTIONS_API_SUBJECTS.updateMetadata,
    request: connectionMetadataRequestSchema,
    reply: successReplySchema,
  }),
};
