import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import {
  apiEnvironmentSchema,
  deliveryIdParamsSchema,
  deliveryPageSchema,
  errorBodySchema,
  listDeliveriesQuerySchema,
  patchEnvironmentBodySchema,
  rotatedSigningKeySchema,
  uniqueKeySchema,
  webhookDeliveryDetailSchema,
  webhookDeliverySchema,
} from '@switchboard/contracts';
import { z } from 'zod';
import { json, type DocumentedRoute } from '../openapi/documented-route';

/** The key-authenticated webhook routes: environment settings, signing key, delivery log. */
export const WEBHOOK_DOCUMENTED_ROUTES: DocumentedRoute[] = [
  {
    method: 'get',
    path: '/environment',
    summary: "The key's environment with its webhook settings and current signing key",
    scope: 'environment:settings:read',
    ok: { status: 200, schema: z.object({ data: apiEnvironmentSchema }), description: 'The environment' },
  },
  {
    method: 'patch',
    path: '/environment',
    summary: 'Change the webhook settings (only the fields passed; null or "" clears a URL)',
    scope: 'environment:settings:write',
    request: { body: json(patchEnvironmentBodySchema) },
    ok: {
      status: 200,
      schema: z.object({ data: apiEnvironmentSchema }),
      description: 'The environment as now stored',
    },
  },
  {
    method: 'post',
    path: '/environment/webhook-signing-key/rotate',
    summary:
      'Replace the webhook signing key; the previous one keeps signing webhook-signature for a grace period',
    scope: 'environment:settings:write',
    ok: {
      status: 200,
      schema: z.object({ data: rotatedSigningKeySchema }),
      description: 'The new signing key',
    },
  },
  {
    method: 'get',
    path: '/environment/webhook-deliveries',
    summary: 'Recent webhook deliveries, newest first',
    scope: 'environment:webhooks:read',
    request: { query: listDeliveriesQuerySchema },
    ok: {
      status: 200,
      schema: deliveryPageSchema,
      description: 'A page of deliveries and the cursor of the next one',
    },
  },
  {
    method: 'get',
    path: '/environment/webhook-deliveries/{id}',
    summary: 'One delivery with its body and every attempt',
    scope: 'environment:webhooks:read',
    request: { params: deliveryIdParamsSchema },
    ok: { status: 200, schema: z.object({ data: webhookDeliveryDetailSchema }), description: 'The delivery' },
  },
  {
    method: 'post',
    path: '/environment/webhook-deliveries/{id}/redeliver',
    summary: 'Send a delivery again now, with the same webhook-id',
    scope: 'environment:webhooks:write',
    request: { params: deliveryIdParamsSchema },
    ok: {
      status: 202,
      schema: z.object({ data: webhookDeliverySchema }),
      description: 'The delivery, queued',
    },
  },
];

/** The public provider webhook ingress: no key; the provider's signature is checked instead. */
export function registerWebhookIngressPath(registry: OpenAPIRegistry): void {
  registry.registerPath({
    method: 'post',
    path: '/webhook/{environmentUuid}/{providerConfigKey}',
    summary:
      "A provider's webhook (the integration's webhook_url). Verified with the integration's secret as the catalog says",
    request: {
      params: z.object({ environmentUuid: z.string().uuid(), providerConfigKey: uniqueKeySchema }),
      body: { content: { '*/*': { schema: z.string().describe('The provider payload, any media type') } } },
    },
    responses: {
      200: {
        description:
          'Stored durably; forwarded to the environment or the matched connections. A handshake gets its answer.',
      },
      204: { description: 'Empty body: nothing to store' },
      400: { description: 'Malformed environment UUID or integration key', ...json(errorBodySchema) },
      401: {
        description: 'The provider signature is missing or wrong (`invalid_signature`); nothing is forwarded',
        ...json(errorBodySchema),
      },
      404: {
        description: 'Unknown environment (`unknown_environment`) or integration (`unknown_provider_config`)',
        ...json(errorBodySchema),
      },
      413: { description: 'Body larger than 768 KiB', ...json(errorBodySchema) },
      503: { description: 'Could not be stored; the provider should retry', ...json(errorBodySchema) },
    },
  });
}
