import { z } from 'zod';
import { natsRequest, successReplySchema } from './nats-request';
import { callerSchema } from './context';
import { SCOPES, type Scope } from './scopes';

const scopeNames = Object.keys(SCOPES) as [Scope, ...Scope[]];
export const scopeSchema = z.enum(scopeNames);

export const API_KEY_SUBJECTS = {
  verify: 'auth.v1.api-key.verify',
  create: 'auth.v1.api-key.create',
  revoke: 'auth.v1.api-key.revoke',
  list: 'auth.v1.api-key.list',
} as const;

/** The gateway sends only the SHA-256 of the presented key; the raw key never leaves the edge. */
export const verifyApiKeyRequestSchema = z.object({ keyHash: z.string().regex(/^[0-9a-f]{64}$/) });
export const verifiedKeySchema = z.object({
  accountId: z.number().int(),
  environmentId: z.number().int(),
  environmentUuid: z.string().uuid(),
  environmentName: z.string(),
  keyId: z.number().int(),
  scopes: z.array(scopeSchema),
});
export type VerifiedKey = z.infer<typeof verifiedKeySchema>;

export const createApiKeyBodySchema = z
  .object({
    display_name: z.string().min(1).max(255),
    scopes: z.array(scopeSchema).min(1).max(scopeNames.length),
  })
  .strict()
  .meta({ id: 'CreateApiKeyBody' });
export type CreateApiKeyBody = z.infer<typeof createApiKeyBodySchema>;

export const createdApiKeySchema = z
  .object({
    id: z.number().int(),
    display_name: z.string(),
    scopes: z.array(scopeSchema),
    /** Shown once, at creation; only its hash is stored. */
    secret_key: z.string(),
    created_at: z.string(),
  })
  .meta({ id: 'CreatedApiKey' });
export type CreatedApiKey = z.infer<typeof createdApiKeySchema>;

export const createApiKeyRequestSchema = z.object({ caller: callerSchema, body: createApiKeyBodySchema });
/** `scopes`: the revoking key's own, which must cover the revoked key's (as when creating one). */
export const revokeApiKeyRequestSchema = z.object({
  caller: callerSchema,
  scopes: z.array(scopeSchema),
  id: z.number().int(),
});

export const listApiKeysRequestSchema = z.object({ caller: callerSchema });
/** An environment's active keys, never their secrets. */
export const listedApiKeySchema = z
  .object({
    id: z.number().int(),
    name: z.string(),
    scopes: z.array(scopeSchema),
    created_at: z.string(),
    /** When a request last authenticated with it; not tracked yet, so absent. */
    last_used_at: z.string().optional(),
    /** The key's last four characters (null for keys created before they were kept). */
    key_suffix: z.string().nullable(),
  })
  .meta({ id: 'ListedApiKey' });
export type ListedApiKey = z.infer<typeof listedApiKeySchema>;

/** API keys (auth-connect answers). */
export const API_KEY_REQUESTS = {
  verify: natsRequest({
    subject: API_KEY_SUBJECTS.verify,
    request: verifyApiKeyRequestSchema,
    reply: verifiedKeySchema,
  }),
  create: natsRequest({
    subject: API_KEY_SUBJECTS.create,
    request: createApiKeyRequestSchema,
    reply: createdApiKeySchema,
  }),
  list: natsRequest({
    subject: API_KEY_SUBJECTS.list,
    request: listApiKeysRequestSchema,
    reply: z.object({ api_keys: z.array(listedApiKeySchema) }),
  }),
  revoke: natsRequest({
    subject: API_KEY_SUBJECTS.revoke,
    request: revokeApiKeyRequestSchema,
    reply: successReplySchema,
  }),
};
