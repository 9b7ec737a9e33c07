import { z } from 'zod';
import { natsRequest, successReplySchema } from './nats-request';
import { callerSchema } from './context';

export const INTEGRATION_SUBJECTS = {
  list: 'auth.v1.integrations.list',
  get: 'auth.v1.integration.get',
  create: 'auth.v1.integration.create',
  update: 'auth.v1.integration.update',
  delete: 'auth.v1.integration.delete',
} as const;

export const uniqueKeySchema = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[a-zA-Z0-9~:.@ _-]+$/, 'may hold only letters, digits and ~ : . @ space _ -');
export const providerKeySchema = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[a-zA-Z0-9_-]+$/, 'may hold only letters, digits, _ and -');

const scopesListSchema = z
  .string()
  .max(4096)
  .regex(/^$|^[0-9a-zA-Z:/_.*-]+(,[0-9a-zA-Z:/_.*-]+)*$/, 'must be a comma-separated list of scopes');

const privateKeySchema = z
  .string()
  .max(16384)
  .regex(/-----BEGIN (RSA )?PRIVATE KEY-----/, 'must be a PEM private key ("BEGIN RSA PRIVATE KEY")');

/**
 * The provider's public key its webhooks are signed with (PEM or base64 DER SubjectPublicKeyInfo), for a
 * provider whose catalog recipe is rsa-sha256 or ed25519: an RSA key does not fit the 255 characters of a
 * webhook secret. Write-only: no answer shows it. An update that sends credentials without it keeps the
 * stored one (as it keeps the webhook secret).
 */
const webhookPublicKeySchema = z.string().min(1).max(16384);

const oauthCredentialsFields = {
  client_id: z.string().min(1).max(255),
  client_secret: z.string().min(1).max(4096),
  scopes: scopesListSchema.optional(),
  // As Nango: at most 255 characters (anything longer is refused, never cut).
  webhook_secret: z.string().max(255).optional(),
  webhook_public_key: webhookPublicKeySchema.optional(),
};
/**
 * Auth modes whose integrations hold no client credentials (each connection brings its own): their
 * integration credentials are only the webhook secret, for a provider whose webhooks are signed.
 */
export const WEBHOOK_ONLY_CREDENTIALS_TYPES = [
  'OAUTH2_CC',
  'API_KEY',
  'BASIC',
  'NONE',
  'JWT',
  'TWO_STEP',
  'SIGNATURE',
  'BILL',
] as const;
const appCredentialsFields = {
  app_id: z.string().min(1).max(255),
  app_link: z.string().url().max(2048),
  private_key: privateKeySchema,
};

export const integrationCredentialsInputSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('OAUTH1'), ...oauthCredentialsFields }).strict(),
  z.object({ type: z.literal('OAUTH2'), ...oauthCredentialsFields }).strict(),
  z.object({ type: z.literal('TBA'), ...oauthCredentialsFields }).strict(),
  // client_id / client_secret: the app's OAuth client, needed to exchange the user code GitHub sends with an
  // installation ("Request user authorization during installation") and so check who installed it.
  z
    .object({
      type: z.literal('APP'),
      ...appCredentialsFields,
      client_id: oauthCredentialsFields.client_id.optional(),
      client_secret: oauthCredentialsFields.client_secret.optional(),
      // GitHub signs an App's webhooks with the App's webhook secret.
      webhook_secret: oauthCredentialsFields.webhook_secret,
      webhook_public_key: oauthCredentialsFields.webhook_public_key,
    })
    .strict(),
  z.object({ type: z.literal('CUSTOM'), ...oauthCredentialsFields, ...appCredentialsFields }).strict(),
  z
    .object({
      type: z.enum(WEBHOOK_ONLY_CREDENTIALS_TYPES),
      // One of the two is required (checked against the provider's recipe).
      webhook_secret: z.string().min(1).max(255).optional(),
      webhook_public_key: webhookPublicKeySchema.optional(),
    })
    .strict(),
]);
export type IntegrationCredentialsInput = z.infer<typeof integrationCredentialsInputSchema>;
export type IntegrationCredentialsType = IntegrationCredentialsInput['type'];

const integrationConfigSchema = z.record(z.string().min(1).max(255), z.unknown());

export const createIntegrationBodySchema = z
  .object({
    provider: providerKeySchema,
    unique_key: uniqueKeySchema,
    display_name: z.string().min(1).max(255).optional(),
    credentials: integrationCredentialsInputSchema.optional(),
    integration_config: integrationConfigSchema.optional(),
    forward_webhooks: z.boolean().optional(),
    custom: z.record(z.string().max(255), z.string().max(4096)).optional(),
  })
  .strict()
  .meta({ id: 'CreateIntegrationBody' });
export type CreateIntegrationBody = z.infer<typeof createIntegrationBodySchema>;

export const updateIntegrationBodySchema = z
  .object({
    unique_key: uniqueKeySchema.optional(),
    display_name: z.string().min(1).max(255).optional(),
    credentials: integrationCredentialsInputSchema.optional(),
    integration_config: integrationConfigSchema.optional(),
    forward_webhooks: z.boolean().optional(),
    custom: z.record(z.string().max(255), z.string().max(4096)).optional(),
  })
  .strict()
  .meta({ id: 'UpdateIntegrationBody' });
export type UpdateIntegrationBody = z.infer<typeof updateIntegrationBodySchema>;

export const integrationCredentialsOutputSchema = z.union([
  z.object({
    type: z.enum(['OAUTH1', 'OAUTH2', 'TBA']),
    client_id: z.string(),
    client_secret: z.string(),
    scopes: z.string().nullable(),
    webhook_secret: z.string().nullable(),
  }),
  z.object({
    type: z.literal('APP'),
    app_id: z.string(),
    private_key: z.string(),
    app_link: z.string(),
    // Not in Nango's shape: present only when one is stored.
    webhook_secret: z.string().optional(),
  }),
  z.object({
    type: z.literal('CUSTOM'),
    client_id: z.string(),
    client_secret: z.string(),
    app_id: z.string(),
    app_link: z.string(),
    private_key: z.string(),
    // Not in Nango's shape: present only when one is stored.
    webhook_secret: z.string().optional(),
  }),
  z.object({ type: z.enum(WEBHOOK_ONLY_CREDENTIALS_TYPES), webhook_secret: z.string().nullable() }),
]);

export const integrationSchema = z
  .object({
    unique_key: z.string(),
    provider: z.string(),
    display_name: z.string(),
    logo: z.string(),
    forward_webhooks: z.boolean(),
    integration_config: z.record(z.string(), z.unknown()).nullable(),
    created_at: z.string(),
    updated_at: z.string(),
    webhook_url: z.string().optional(),
    credentials: integrationCredentialsOutputSchema.nullable().optional(),
  })
  .meta({ id: 'Integration' });
export type Integration = z.infer<typeof integrationSchema>;

/** `include` accepts one value or several (the official client sends only the last of several). */
export const integrationIncludeSchema = z
  .union([z.enum(['webhook', 'credentials']), z.array(z.enum(['webhook', 'credentials'])).max(2)])
  .transform((v) => (Array.isArray(v) ? v : [v]));

export const getIntegrationQuerySchema = z.object({ include: integrationIncludeSchema.optional() }).strict();

export const listIntegrationsRequestSchema = z.object({ caller: callerSchema });
export const getIntegrationRequestSchema = z.object({
  caller: callerSchema,
  uniqueKey: z.string(),
  include: z.object({ webhook: z.boolean(), credentials: z.boolean() }),
});
export const createIntegrationRequestSchema = z.object({
  caller: callerSchema,
  body: createIntegrationBodySchema,
});
export const updateIntegrationRequestSchema = z.object({
  caller: callerSchema,
  uniqueKey: z.string(),
  body: updateIntegrationBodySchema,
});
export const deleteIntegrationRequestSchema = z.object({ caller: callerSchema, uniqueKey: z.string() });

/** Integrations (auth-connect answers). */
export const INTEGRATION_REQUESTS = {
  list: natsRequest({
    subject: INTEGRATION_SUBJECTS.list,
    request: listIntegrationsRequestSchema,
    reply: z.array(integrationSchema),
  }),
  get: natsRequest({
    subject: INTEGRATION_SUBJECTS.get,
    request: getIntegrationRequestSchema,
    reply: integrationSchema,
  }),
  create: natsRequest({
    subject: INTEGRATION_SUBJECTS.create,
    request: createIntegrationRequestSchema,
    reply: integrationSchema,
  }),
  update: natsRequest({
    subject: INTEGRATION_SUBJECTS.update,
    request: updateIntegrationRequestSchema,
    reply: integrationSchema,
  }),
  delete: natsRequest({
    subject: INTEGRATION_SUBJECTS.delete,
    request: deleteIntegrationRequestSchema,
    reply: successReplySchema,
  }),
};
