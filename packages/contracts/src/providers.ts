import { z } from 'zod';
import { natsRequest } from './nats-request';

export const PROVIDER_SUBJECTS = {
  list: 'auth.v1.providers.list',
  get: 'auth.v1.provider.get',
} as const;

/** A catalog entry as served: the catalog's own fields (loosely typed here) plus `name` and `logo_url`. */
export const apiProviderSchema = z
  .looseObject({
    name: z.string(),
    display_name: z.string(),
    auth_mode: z.string(),
    categories: z.array(z.string()).optional(),
    docs: z.string().optional(),
    logo_url: z.string(),
  })
  .meta({ id: 'Provider' });
export type ApiProvider = z.infer<typeof apiProviderSchema>;

export const listProvidersQuerySchema = z.object({ search: z.string().max(255).optional() }).strict();
export const listProvidersRequestSchema = z.object({ search: z.string().max(255).optional() });
export const getProviderRequestSchema = z.object({ name: z.string().max(255) });

/** The provider catalog (auth-connect answers). */
export const PROVIDER_REQUESTS = {
  list: natsRequest({
    subject: PROVIDER_SUBJECTS.list,
    request: listProvidersRequestSchema,
    reply: z.array(apiProviderSchema),
  }),
  get: natsRequest({
    subject: PROVIDER_SUBJECTS.get,
    request: getProviderRequestSchema,
    reply: apiProviderSchema,
  }),
};
