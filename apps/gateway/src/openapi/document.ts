import './zod-openapi';
import { OpenApiGeneratorV31, OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import {
  apiPublicConnectionFullSchema,
  connectionKeyQuerySchema,
  connectionMetadataBodySchema,
  connectionParamsSchema,
  getConnectionQuerySchema,
  importConnectionBodySchema,
  listConnectionsQuerySchema,
  listConnectionsResponseSchema,
  patchConnectionBodySchema,
  apiProviderSchema,
  createApiKeyBodySchema,
  listedApiKeySchema,
  createdApiKeySchema,
  createIntegrationBodySchema,
  environmentVariableSchema,
  errorBodySchema,
  getIntegrationQuerySchema,
  integrationSchema,
  listProvidersQuerySchema,
  providerKeySchema,
  replaceEnvironmentVariablesBodySchema,
  SCOPES,
  uniqueKeySchema,
  updateIntegrationBodySchema,
  connectSessionCreatedSchema,
  createConnectSessionBodySchema,
  reconnectConnectSessionBodySchema,
} from '@switchboard/contracts';
import { z } from 'zod';
import { FUNCTIONS_DOCUMENTED_ROUTES } from '../functions/functions.openapi';
import { registerProxyPaths } from '../proxy/proxy.openapi';
import { RECORDS_DOCUMENTED_ROUTES } from '../records/records.openapi';
import { SYNCS_DOCUMENTED_ROUTES } from '../syncs/syncs.openapi';
import { registerWebhookIngressPath, WEBHOOK_DOCUMENTED_ROUTES } from '../webhooks/webhooks.openapi';
import { registerConsolePaths } from '../console/console-auth.openapi';
import { json, type DocumentedRoute } from './documented-route';

const errorResponse = (description: string) => ({ description, ...json(errorBodySchema) });
const integrationParams = z.object({ uniqueKey: uniqueKeySchema });
const providerParams = z.object({ provider: providerKeySchema });

/** Every key-authenticated route of the public API. The drift test checks the controllers against this list. */
export const DOCUMENTED_ROUTES: DocumentedRoute[] = [
  {
    method: 'get',
    path: '/providers',
    summary: 'List providers of the catalog',
    scope: 'environment:providers:read',
    request: { query: listProvidersQuerySchema },
    ok: {
      status: 200,
      schema: z.object({ data: z.array(apiProviderSchema) }),
      description: 'Providers, optionally filtered',
    },
  },
  {
    method: 'get',
    path: '/providers/{provider}',
    summary: 'Get one provider',
    scope: 'environment:providers:read',
    request: { params: providerParams },
    ok: { status: 200, schema: z.object({ data: apiProviderSchema }), description: 'The provider' },
  },
  {
    method: 'get',
    path: '/providers/{provider}/templates',
    summary: "List a provider's pre-built function templates",
    scope: 'environment:providers:read',
    request: { params: providerParams },
    ok: {
      status: 200,
      schema: z.object({ data: z.array(z.unknown()) }),
      description: 'Templates (github, slack and hubspot have some)',
    },
  },
  {
    method: 'get',
    path: '/integrations',
    summary: 'List integrations',
    scope: 'environment:integrations:read',
    ok: {
      status: 200,
      schema: z.object({ data: z.array(integrationSchema) }),
      description: 'Integrations of the environment',
    },
  },
  {
    method: 'post',
    path: '/integrations',
    summary: 'Create an integration',
    scope: 'environment:integrations:write',
    request: { body: json(createIntegrationBodySchema) },
    ok: {
      status: 200,
      schema: z.object({ data: integrationSchema }),
      description: 'The created integration',
    },
  },
  {
    method: 'get',
    path: '/integrations/{uniqueKey}',
    summary: 'Get an integration (include=credentials also needs environment:integrations:read_credentials)',
    scope: 'environment:integrations:read',
    request: { params: integrationParams, query: getIntegrationQuerySchema },
    ok: { status: 200, schema: z.object({ data: integrationSchema }), description: 'The integration' },
  },
  {
    method: 'patch',
    path: '/integrations/{uniqueKey}',
    summary: 'Update an integration (only the fields passed)',
    scope: 'environment:integrations:write',
    request: { params: integrationParams, body: json(updateIntegrationBodySchema) },
    ok: {
      status: 200,
      schema: z.object({ data: integrationSchema }),
      description: 'The updated integration',
    },
  },
  {
    method: 'delete',
    path: '/integrations/{uniqueKey}',
    summary: 'Delete an integration and its connections',
    scope: 'environment:integrations:write',
    request: { params: integrationParams },
    ok: { status: 200, schema: z.object({ success: z.literal(true) }), description: 'Deleted' },
  },
  {
    method: 'get',
    path: '/environment-variables',
    summary: 'List environment variables',
    scope: 'environment:environment_variables:read',
    ok: { status: 200, schema: z.array(environmentVariableSchema), description: 'The variables' },
  },
  {
    method: 'put',
    path: '/environment-variables',
    summary: 'Replace the environment variables',
    scope: 'environment:environment_variables:write',
    request: { body: json(replaceEnvironmentVariablesBodySchema) },
    ok: { status: 200, schema: z.array(environmentVariableSchema), description: 'The variables now stored' },
  },
  {
    method: 'get',
    path: '/environment/api-keys',
    summary: "List the environment's active API keys, without their secrets",
    scope: 'environment:api_keys:write',
    ok: {
      status: 200,
      schema: z.object({ api_keys: z.array(listedApiKeySchema) }),
      description: 'Active keys, oldest first; `key_suffix` is the last four characters of the secret',
    },
  },
  {
    method: 'post',
    path: '/environment/api-keys',
    summary: 'Create an API key with chosen scopes',
    scope: 'environment:api_keys:write',
    request: { body: json(createApiKeyBodySchema) },
    ok: {
      status: 201,
      schema: z.object({ data: createdApiKeySchema }),
      description: 'The key (its secret is shown only here)',
    },
  },
  {
    method: 'delete',
    path: '/environment/api-keys/{id}',
    summary:
      'Revoke an API key (403 unless the caller holds all its scopes; 409 for the last key with environment:api_keys:write)',
    scope: 'environment:api_keys:write',
    request: { params: z.object({ id: z.coerce.number().int().positive() }) },
    ok: { status: 200, schema: z.object({ success: z.literal(true) }), description: 'Revoked' },
  },
  {
    method: 'get',
    path: '/connections',
    summary: 'List connections (no credentials), newest first',
    scope: 'environment:connections:read',
    request: { query: listConnectionsQuerySchema },
    ok: {
      status: 200,
      schema: listConnectionsResponseSchema,
      description: 'Connections matching every given filter',
    },
  },
  {
    method: 'post',
    path: '/connections',
    summary: 'Import a connection with its credentials',
    scope: 'environment:connections:write',
    request: { body: json(importConnectionBodySchema) },
    ok: {
      status: 201,
      schema: apiPublicConnectionFullSchema,
      description: 'The stored connection (credentials only with environment:connections:read_credentials)',
    },
  },
  {
    method: 'get',
    path: '/connections/{connectionId}',
    summary:
      'Get a connection; its credentials (refreshed when they expire within 15 minutes) need environment:connections:read_credentials',
    scope: 'environment:connections:read',
    request: { params: connectionParamsSchema, query: getConnectionQuerySchema },
    ok: { status: 200, schema: apiPublicConnectionFullSchema, description: 'The connection' },
  },
  {
    method: 'patch',
    path: '/connections/{connectionId}',
    summary: "Update a connection's tags, end user or webhook URL override",
    scope: 'environment:connections:write',
    request: {
      params: connectionParamsSchema,
      query: connectionKeyQuerySchema,
      body: json(patchConnectionBodySchema),
    },
    ok: { status: 200, schema: z.object({ success: z.literal(true) }), description: 'Updated' },
  },
  {
    method: 'delete',
    path: '/connections/{connectionId}',
    summary: 'Delete a connection',
    scope: 'environment:connections:write',
    request: { params: connectionParamsSchema, query: connectionKeyQuerySchema },
    ok: { status: 200, schema: z.object({ success: z.literal(true) }), description: 'Deleted' },
  },
  {
    method: 'post',
    path: '/connections/metadata',
    summary: 'Replace the metadata of one or several connections (all or nothing)',
    scope: 'environment:connections:write',
    request: { body: json(connectionMetadataBodySchema) },
    ok: { status: 201, schema: connectionMetadataBodySchema, description: 'The request body, echoed' },
  },
  {
    method: 'patch',
    path: '/connections/metadata',
    summary: 'Merge top-level keys into the metadata of one or several connections',
    scope: 'environment:connections:write',
    request: { body: json(connectionMetadataBodySchema) },
    ok: { status: 200, schema: connectionMetadataBodySchema, description: 'The request body, echoed' },
  },
  {
    method: 'post',
    path: '/connect/sessions',
    summary: 'Create a connect session (a 30-minute token and connect link for one end user)',
    scope: 'environment:connect_sessions:write',
    request: { body: json(createConnectSessionBodySchema) },
    ok: {
      status: 201,
      schema: z.object({ data: connectSessionCreatedSchema }),
      description: 'The session token (shown only here) and its connect link',
    },
  },
  {
    method: 'post',
    path: '/connect/sessions/reconnect',
    summary: 'Create a session that re-authorizes a connection made through a connect session',
    scope: 'environment:connect_sessions:write',
    request: { body: json(reconnectConnectSessionBodySchema) },
    ok: {
      status: 201,
      schema: z.object({ data: connectSessionCreatedSchema }),
      description: 'The session token (shown only here) and its connect link',
    },
  },
  ...WEBHOOK_DOCUMENTED_ROUTES,
  ...FUNCTIONS_DOCUMENTED_ROUTES,
  ...RECORDS_DOCUMENTED_ROUTES,
  ...SYNCS_DOCUMENTED_ROUTES,
];

/** The OpenAPI 3.1 document, generated from the zod contracts. Deterministic, so CI can diff it. */
export function buildOpenApiDocument(
  serverUrl = 'http://localhost:3003',
): ReturnType<OpenApiGeneratorV31['generateDocument']> {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'secretKey', {
    type: 'http',
    scheme: 'bearer',
    description:
      'An environment secret key. Each route names the scope it needs. A browser signed in to the console ' +
      'may send its `switchboard_console` cookie instead (no Authorization header), naming the environment in ' +
      '`X-Switchboard-Environment` and, on writes, its `X-CSRF-Token`; its role gives the scopes.',
  });
  for (const { scope, ok, errors, ...route } of DOCUMENTED_ROUTES) {
    registry.registerPath({
      ...route,
      description: `Requires scope \`${scope}\` (${SCOPES[scope]}).`,
      security: [{ secretKey: [scope] }],
      responses: {
        [ok.status]: {
          description: ok.description,
          ...json(ok.schema),
          ...(ok.headers
            ? {
                headers: Object.fromEntries(
                  Object.entries(ok.headers).map(([name, description]) => [
                    name,
                    { description, schema: { type: 'string' as const } },
                  ]),
                ),
              }
            : {}),
        },
        400: errorResponse(
          'Invalid input (`invalid_body`, `invalid_query_params`, `invalid_uri_params`, `invalid_json`)',
        ),
        401: errorResponse('Missing, malformed or unknown secret key'),
        403: errorResponse('The key lacks the scope (`forbidden`)'),
        404: errorResponse('Not found'),
        429: errorResponse('Rate limited (`too_many_request`); see Retry-After'),
        ...Object.fromEntries(
          Object.entries(errors ?? {}).map(([status, description]) => [
            status,
            Number(status) < 400 ? { description } : errorResponse(description),
          ]),
        ),
      },
    });
  }
  registry.registerPath({
    method: 'get',
    path: '/health',
    summary: 'Liveness: answers {"result":"ok"} when the gateway reaches NATS',
    responses: { 200: { description: 'OK', ...json(z.object({ result: z.literal('ok') })) } },
  });
  registerWebhookIngressPath(registry);
  registerConsolePaths(registry);
  registerProxyPaths(registry);
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Switchboard API',
      version: '0.1.0',
      description:
        'Nango-compatible public API of Switchboard. Errors are `{ "error": { "code", "message", "errors" } }`.',
    },
    servers: [{ url: serverUrl }],
  });
}
