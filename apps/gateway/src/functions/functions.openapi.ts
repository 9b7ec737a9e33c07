import {
  connectionHeadersSchema,
  deleteFunctionQuerySchema,
  deployBodySchema,
  deployedFunctionSchema,
  functionCodeSchema,
  functionQuerySchema,
  listFunctionsQuerySchema,
  listFunctionsResponseSchema,
  openAiFunctionSchema,
  runLogsResponseSchema,
  listRunsQuerySchema,
  actionRunsPageSchema,
  scriptDifferencesSchema,
  scriptsConfigQuerySchema,
  standardNangoConfigSchema,
  syncDeploymentResultSchema,
  triggerActionBodySchema,
  uniqueKeySchema,
  functionNameSchema,
  RUN_ID_HEADER,
} from '@switchboard/contracts';
import { z } from 'zod';
import { json, type DocumentedRoute } from '../openapi/documented-route';

const functionParams = z.object({ uniqueKey: uniqueKeySchema, name: functionNameSchema });
const runId = { [RUN_ID_HEADER]: 'The run id, for `GET /functions/runs/{id}/logs`' };

/** Deploy (`nango deploy`), the functions of an integration, scripts config, actions and run logs. */
export const FUNCTIONS_DOCUMENTED_ROUTES: DocumentedRoute[] = [
  {
    method: 'post',
    path: '/sync/deploy/confirmation',
    summary:
      'What a deploy would change (new, updated and deleted functions); nothing is stored. The `nango deploy` CLI calls it first',
    scope: 'environment:functions:write',
    request: { body: json(deployBodySchema) },
    ok: { status: 200, schema: scriptDifferencesSchema, description: 'The plan' },
    errors: { 413: 'The body is over SWITCHBOARD_DEPLOY_BODY_LIMIT_BYTES (`payload_too_large`)' },
  },
  {
    method: 'post',
    path: '/sync/deploy',
    summary:
      'Deploy functions: `deployMode` all (the whole environment), integration or single (upsert only); `reconcile: true` deletes what the scope no longer has. A redeployed function gets a new version atomically; running invocations keep theirs',
    scope: 'environment:functions:write',
    request: { body: json(deployBodySchema) },
    ok: {
      status: 200,
      schema: z.array(syncDeploymentResultSchema),
      description: 'Every function deployed (syncs, actions and on-event scripts), with its version',
    },
    errors: { 413: 'The body is over SWITCHBOARD_DEPLOY_BODY_LIMIT_BYTES (`payload_too_large`)' },
  },
  {
    method: 'get',
    path: '/integrations/{uniqueKey}/functions',
    summary: 'List the deployed functions of an integration (page from 0, limit 1..100)',
    scope: 'environment:functions:read',
    request: { params: z.object({ uniqueKey: uniqueKeySchema }), query: listFunctionsQuerySchema },
    ok: { status: 200, schema: listFunctionsResponseSchema, description: 'A page of functions' },
  },
  {
    method: 'get',
    path: '/integrations/{uniqueKey}/functions/{name}',
    summary: 'Get a deployed function (`type` chooses among functions sharing the name)',
    scope: 'environment:functions:read',
    request: { params: functionParams, query: functionQuerySchema },
    ok: { status: 200, schema: z.object({ data: deployedFunctionSchema }), description: 'The function' },
    errors: { 409: 'Several functions share the name (`ambiguous_function`, `payload.matches`)' },
  },
  {
    method: 'delete',
    path: '/integrations/{uniqueKey}/functions/{name}',
    summary: 'Delete a deployed function',
    scope: 'environment:functions:write',
    request: { params: functionParams, query: deleteFunctionQuerySchema },
    ok: {
      status: 200,
      schema: z.object({ data: z.object({ success: z.literal(true) }) }),
      description: 'Deleted',
    },
  },
  {
    method: 'get',
    path: '/integrations/{uniqueKey}/functions/{name}/code',
    summary: "A deployed function's source (TypeScript when the CLI sent it, else the compiled bundle)",
    scope: 'environment:functions:read',
    request: { params: functionParams, query: functionQuerySchema },
    ok: { status: 200, schema: functionCodeSchema, description: 'The code' },
    errors: { 409: 'Several functions share the name (`ambiguous_function`, `payload.matches`)' },
  },
  {
    method: 'get',
    path: '/scripts/config',
    summary:
      'Every deployed function by integration (`format=nango`), or the actions as OpenAI tools (`format=openai`)',
    scope: 'environment:functions:read',
    request: { query: scriptsConfigQuerySchema },
    ok: {
      status: 200,
      schema: z.union([
        z.array(standardNangoConfigSchema),
        z.object({ data: z.array(openAiFunctionSchema) }),
      ]),
      description: '`StandardNangoConfig[]`, or `{data: [{name, description, parameters}]}`',
    },
  },
  {
    method: 'post',
    path: '/action/trigger',
    summary:
      'Run an action for a connection. Synchronous: 200 with the output. `X-Async: true`: 202 with `Location`, retried up to `X-Max-Retries` (0..5) times, an `async_action` webhook when done',
    scope: 'environment:actions:trigger',
    request: {
      headers: z.object({
        'connection-id': z.string(),
        'provider-config-key': z.string(),
        'x-async': z.enum(['true', 'false']).optional(),
        'x-max-retries': z.string().optional(),
      }),
      body: json(triggerActionBodySchema),
    },
    ok: {
      status: 200,
      schema: z.unknown(),
      description: "The action's output as it returned it; 202 `{id, statusUrl}` when async",
      headers: runId,
    },
    errors: {
      202: 'Async: accepted, `{id, statusUrl}` (also in `Location`)',
      400: '`invalid_action_input`: the input schema refused the input (its issues in `error.payload`; the run id header is set)',
      500: 'The script failed (the run id header is set): `script_internal_error` (a thrown Error, `error.payload` = `{name, message}`), `action_script_runtime_error` (an `ActionError`, its payload in `error.payload`), `action_script_failure` (load error, CPU or memory limit), `invalid_action_output`, `action_output_too_large` (over 10 MB), `script_timeout`',
      503: '`function_runtime_lost`: the functions-runtime replica running the script died or was cut off (noticed within its lease, 30 s); `service_unavailable`: a service or its database is briefly out of reach. With `Retry-After`',
    },
  },
  {
    method: 'post',
    path: '/mcp',
    summary:
      "MCP (Streamable HTTP, stateless) for one connection (`Connection-Id`, `Provider-Config-Key`): its integration's enabled actions as tools (`tools/list`, with their input schema and description); `tools/call` runs the action as `POST /action/trigger` does, a failure being a tool result with `isError: true`",
    scope: 'environment:actions:trigger',
    request: {
      headers: connectionHeadersSchema,
      body: json(z.record(z.string(), z.unknown()).meta({ description: 'A JSON-RPC 2.0 message' })),
    },
    ok: { status: 200, schema: z.unknown(), description: 'The JSON-RPC answer (202 for a notification)' },
    errors: { 400: '`invalid_headers`, or `unknown_connection` when the headers name no connection' },
  },
  {
    method: 'get',
    path: '/mcp',
    summary: 'Not served: the MCP endpoint is stateless and opens no event stream (405, a JSON-RPC error)',
    scope: 'environment:actions:trigger',
    ok: { status: 405, schema: z.unknown(), description: 'A JSON-RPC error `-32000` "Method not allowed."' },
  },
  {
    method: 'get',
    path: '/action/{id}',
    summary: "An async action's output; 404 `not_found` while it runs or if unknown, its error if it failed",
    scope: 'environment:actions:trigger',
    request: { params: z.object({ id: z.string() }) },
    ok: { status: 200, schema: z.unknown(), description: "The action's output" },
    errors: {
      500: "The action failed (the script's error, as on a synchronous trigger)",
      503: 'The action failed with `function_runtime_lost` (its last attempt lost its functions-runtime replica; `error.payload.run_id`)',
    },
  },
  {
    method: 'get',
    path: '/functions/runs',
    summary:
      "The environment's action runs, newest first, with their outcome; filtered by integration, action, connection and status",
    scope: 'environment:functions:read',
    request: { query: listRunsQuerySchema },
    ok: {
      status: 200,
      schema: actionRunsPageSchema,
      description: 'A page of runs; `next_cursor` reads the next',
    },
  },
  {
    method: 'get',
    path: '/functions/runs/{id}/logs',
    summary:
      "A run's status and the lines its script logged (every attempt); the id comes from the trigger's header",
    scope: 'environment:functions:read',
    request: { params: z.object({ id: z.string().uuid() }) },
    ok: { status: 200, schema: runLogsResponseSchema, description: 'The run and its logs' },
  },
];
