import { z } from 'zod';
import { natsRequest, successReplySchema } from './nats-request';
import { connectionHeadersSchema } from './connections';
import { callerSchema } from './context';
import {
  actionTriggerRequestSchema,
  candidateConnectionSchema,
  checkpointClearRequestSchema,
  checkpointGetRequestSchema,
  checkpointReplySchema,
  checkpointSaveRequestSchema,
  FUNCTION_HOST_SUBJECTS,
  FUNCTION_LOG_LEVELS,
  FUNCTION_TYPES,
  functionNameSchema,
  lockAcquireRequestSchema,
  lockReleaseAllRequestSchema,
  lockReleaseRequestSchema,
  lockReplySchema,
  ON_EVENT_TYPES,
} from './functions';

/** The public functions API (`/integrations/{key}/functions`, `/scripts/config`, `/action/*`), served by sync-orchestrator. */
export const FUNCTIONS_API_SUBJECTS = {
  list: 'orchestrator.v1.functions.list',
  get: 'orchestrator.v1.function.get',
  code: 'orchestrator.v1.function.code',
  delete: 'orchestrator.v1.function.delete',
  scriptsConfig: 'orchestrator.v1.scripts.config',
  /** `GET /action/{id}`: an async action's outcome. */
  actionResult: 'orchestrator.v1.action.result',
  /** `GET /functions/runs/{id}/logs`. */
  runLogs: 'orchestrator.v1.run.logs',
  /** `GET /functions/runs`: an environment's action runs, newest first. */
  listRuns: 'orchestrator.v1.runs.list',
  /**
   * orchestrator → its own replicas (core NATS broadcast, no reply, may be missed): functions of an
   * environment were deployed or deleted; each replica drops what it cached about them.
   */
  changed: 'orchestrator.v1.functions.changed',
} as const;

export const functionsChangedSchema = z.object({ environmentId: z.number().int() });

/**
 * Asked by other services at points of a connection's life where a deployed on-event script may run
 * and its outcome matters before they go on.
 */
export const ON_EVENT_SUBJECTS = {
  /**
   * auth-connect (a connect flow) or the vault (`POST /connections`) → orchestrator, before a new connection
   * or new credentials are stored: `validate-connection` scripts run with the candidate credentials;
   * `ok: false` refuses the connection with `message`.
   */
  validateConnection: 'orchestrator.v1.on-event.validate-connection',
  /** vault → orchestrator, before a connection is deleted: `pre-connection-deletion` scripts. */
  preConnectionDeletion: 'orchestrator.v1.on-event.pre-connection-deletion',
} as const;

const queryInt = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

/** The client sends `type` on every call; repeated keys (`?type=a&type=b`) count as invalid. */
export const functionTypeQuerySchema = z.enum(FUNCTION_TYPES);

export const listFunctionsQuerySchema = z
  .object({
    type: functionTypeQuerySchema.optional(),
    search: z.string().max(255).optional(),
    page: queryInt(0, 1_000_000).default(0),
    limit: queryInt(1, 100).default(20),
  })
  .strict();
export type ListFunctionsQuery = z.infer<typeof listFunctionsQuerySchema>;

export const functionQuerySchema = z.object({ type: functionTypeQuerySchema.optional() }).strict();
export const deleteFunctionQuerySchema = z.object({ type: functionTypeQuerySchema }).strict();
export const functionParamsSchema = z.object({
  uniqueKey: z.string().min(1).max(255),
  name: functionNameSchema,
});

const availability = {
  id: z.number().int(),
  enabled: z.boolean(),
  last_deployed: z.string(),
  source: z.enum(['catalog', 'standalone', 'repo']),
};
const base = {
  name: z.string(),
  description: z.string().optional(),
  scopes: z.array(z.string()).optional(),
};
/** `DeployedNangoFunction` of Nango's API: one shape per function type. */
export const deployedFunctionSchema = z
  .discriminatedUnion('type', [
    z.object({
      type: z.literal('sync'),
      ...base,
      input: z.string().optional(),
      returns: z.array(z.string()),
      json_schema: z.record(z.string(), z.unknown()).nullable(),
      runs: z.string().nullable(),
      auto_start: z.boolean(),
      track_deletes: z.boolean(),
      ...availability,
    }),
    z.object({
      type: z.literal('action'),
      ...base,
      input: z.string().optional(),
      returns: z.array(z.string()),
      json_schema: z.record(z.string(), z.unknown()).nullable(),
      ...availability,
    }),
    z.object({ type: z.literal('on-event'), ...base, event: z.enum(ON_EVENT_TYPES), ...availability }),
  ])
  .meta({ id: 'DeployedFunction' });
export type DeployedFunction = z.infer<typeof deployedFunctionSchema>;

export const listFunctionsResponseSchema = z.object({
  data: z.array(deployedFunctionSchema),
  pagination: z.object({ total: z.number().int(), page: z.number().int(), limit: z.number().int() }),
});
export type ListFunctionsResponse = z.infer<typeof listFunctionsResponseSchema>;

export const functionCodeSchema = z.object({ type: z.enum(FUNCTION_TYPES), code: z.string() });
export type FunctionCode = z.infer<typeof functionCodeSchema>;

export const listFunctionsRequestSchema = z.object({
  caller: callerSchema,
  uniqueKey: z.string(),
  /** The query as the gateway parsed it (numbers, not strings). */
  query: z.object({
    type: z.enum(FUNCTION_TYPES).optional(),
    search: z.string().max(255).optional(),
    page: z.number().int().min(0),
    limit: z.number().int().min(1).max(100),
  }),
});
export const functionRequestSchema = z.object({
  caller: callerSchema,
  uniqueKey: z.string(),
  name: functionNameSchema,
  type: z.enum(FUNCTION_TYPES).optional(),
});
export type FunctionRequest = z.infer<typeof functionRequestSchema>;

/** `NangoSyncConfig` of Nango's `GET /scripts/config`. */
export const nangoSyncConfigSchema = z.object({
  name: z.string(),
  type: z.enum(FUNCTION_TYPES),
  runs: z.string().nullable().optional(),
  auto_start: z.boolean().optional(),
  attributes: z.record(z.string(), z.unknown()).optional(),
  description: z.string().optional(),
  scopes: z.array(z.string()).optional(),
  metadata: z
    .object({ description: z.string().optional(), scopes: z.array(z.string()).optional() })
    .optional(),
  track_deletes: z.boolean().optional(),
  returns: z.array(z.string()),
  endpoints: z.array(z.object({ method: z.string(), path: z.string(), group: z.string().optional() })),
  source: z.enum(['catalog', 'standalone', 'repo']).optional(),
  version: z.string().nullable().optional(),
  last_deployed: z.string().nullable().optional(),
  id: z.number().int().optional(),
  input: z.string().optional(),
  sync_type: z.enum(['full', 'incremental']).optional(),
  webhookSubscriptions: z.array(z.string()).optional(),
  enabled: z.boolean().optional(),
  json_schema: z.record(z.string(), z.unknown()).nullable(),
  sdk_version: z.string().nullable(),
  features: z.array(z.string()),
  /**
   * The models the function uses, as Nango lists them for zero-yaml functions: each definition of
   * `json_schema` by name, `fields` empty (`[]` when there is no schema). Clients map over it.
   */
  models: z.array(z.object({ name: z.string(), fields: z.array(z.unknown()) })),
  /** Nango's flags for functions shared with or copied from its template catalog. */
  is_public: z.boolean(),
  pre_built: z.boolean(),
});
export const standardNangoConfigSchema = z
  .object({
    providerConfigKey: z.string(),
    provider: z.string().optional(),
    syncs: z.array(nangoSyncConfigSchema),
    actions: z.array(nangoSyncConfigSchema),
    'on-events': z.array(nangoSyncConfigSchema),
  })
  .meta({ id: 'StandardNangoConfig' });
export type StandardNangoConfig = z.infer<typeof standardNangoConfigSchema>;

export const openAiFunctionSchema = z.object({
  name: z.string(),
  description: z.string(),
  parameters: z.record(z.string(), z.unknown()),
});
export type OpenAiFunction = z.infer<typeof openAiFunctionSchema>;

export const scriptsConfigQuerySchema = z
  .object({ format: z.enum(['nango', 'openai']).default('nango') })
  .strict();
export const scriptsConfigRequestSchema = z.object({
  caller: callerSchema,
  format: z.enum(['nango', 'openai']),
});

// ---- actions ---------------------------------------------------------------------------------------

/** `POST /action/trigger` body as @nangohq/node sends it. */
export const triggerActionBodySchema = z.object({
  action_name: functionNameSchema,
  input: z.unknown().optional(),
});
export const triggerActionHeadersSchema = connectionHeadersSchema.extend({
  'x-async': z.enum(['true', 'false']).optional(),
  'x-max-retries': z
    .string()
    .regex(/^[0-5]$/, 'must be a whole number from 0 to 5')
    .transform(Number)
    .optional(),
});

/**
 * An action output too large for one NATS reply is put in this JetStream object store bucket by the
 * orchestrator (under a fresh id, `outputRef`); the gateway streams it to the caller and deletes it.
 */
export const ACTION_REPLY_BUCKET = 'action-replies';

/** An action's output as the orchestrator hands it over: inline, or where it put it. */
export const actionOutputReplySchema = z.object({
  output: z.unknown().optional(),
  outputRef: z.string().optional(),
});
export type ActionOutputReply = z.infer<typeof actionOutputReplySchema>;

/** What the orchestrator answers on `orchestrator.v1.action.trigger` (the script's own failure is thrown as a coded error). */
export const actionTriggerReplySchema = z.discriminatedUnion('async', [
  z.object({ async: z.literal(false), invocationId: z.string().uuid(), ...actionOutputReplySchema.shape }),
  z.object({ async: z.literal(true), invocationId: z.string().uuid() }),
]);
export type ActionTriggerReply = z.infer<typeof actionTriggerReplySchema>;

export const asyncActionAcceptedSchema = z.object({ id: z.string().uuid(), statusUrl: z.string() });

export const invocationRequestSchema = z.object({ caller: callerSchema, id: z.string().uuid() });
export type InvocationRequest = z.infer<typeof invocationRequestSchema>;

export const runLogsResponseSchema = z
  .object({
    data: z.object({
      id: z.string(),
      function: z.string(),
      type: z.enum(FUNCTION_TYPES),
      status: z.enum(['running', 'succeeded', 'failed']),
      attempts: z.number().int(),
      created_at: z.string(),
      finished_at: z.string().nullable(),
      logs: z.array(
        z.object({
          attempt: z.number().int(),
          level: z.enum(FUNCTION_LOG_LEVELS),
          message: z.string(),
          at: z.string(),
        }),
      ),
    }),
  })
  .meta({ id: 'FunctionRunLogs' });
export type RunLogsResponse = z.infer<typeof runLogsResponseSchema>;

export const RUN_STATUSES = ['running', 'succeeded', 'failed'] as const;

/** `next_cursor` of a runs page: the last run's creation (epoch ms) and id, newest first. */
const runsCursorSchema = z
  .string()
  .regex(
    /^[0-9]{1,15}_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
    'cursor must be the next_cursor of a previous page',
  );

export const listRunsQuerySchema = z
  .object({
    /** The integration's unique key (`provider_config_key`). */
    integration: z.string().min(1).max(255).optional(),
    action: z.string().min(1).max(255).optional(),
    connection_id: z.string().min(1).max(255).optional(),
    status: z.enum(RUN_STATUSES).optional(),
    limit: z.coerce.number().int().min(1).max(100).default(25),
    cursor: runsCursorSchema.optional(),
  })
  .strict()
  .meta({ id: 'ListRunsQuery' });
export type ListRunsQuery = z.infer<typeof listRunsQuerySchema>;

export const actionRunSchema = z
  .object({
    id: z.string().uuid(),
    action: z.string(),
    integration: z.string(),
    connection_id: z.string(),
    status: z.enum(RUN_STATUSES),
    async: z.boolean(),
    attempts: z.number().int(),
    created_at: z.string(),
    finished_at: z.string().nullable(),
    /** A failed run's outcome: the error its trigger answered (or would have). */
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
  })
  .meta({ id: 'ActionRun' });
export type ActionRun = z.infer<typeof actionRunSchema>;

export const actionRunsPageSchema = z
  .object({ data: z.array(actionRunSchema), next_cursor: z.string().nullable() })
  .meta({ id: 'ActionRunsPage' });
export type ActionRunsPage = z.infer<typeof actionRunsPageSchema>;

export const listRunsRequestSchema = z.object({ caller: callerSchema, query: listRunsQuerySchema });
export type ListRunsRequest = z.infer<typeof listRunsRequestSchema>;

/** Header carrying the invocation id on `POST /action/trigger` answers (sync and async). */
export const RUN_ID_HEADER = 'x-switchboard-run-id';

// ---- on-event -------------------------------------------------------------------------------------

export const onEventConnectionSchema = z.object({
  caller: callerSchema,
  connectionId: z.string(),
  providerConfigKey: z.string(),
});
export type OnEventConnection = z.infer<typeof onEventConnectionSchema>;
export const validateConnectionRequestSchema = onEventConnectionSchema.extend({
  provider: z.string(),
  /** `override` for a reconnect: the stored connection stays as it is when the candidate is refused. */
  operation: z.enum(['creation', 'override']),
  candidate: candidateConnectionSchema,
});
export type ValidateConnectionRequest = z.infer<typeof validateConnectionRequestSchema>;
/** `ok: false` when a script failed (or, for validate-connection, refused); `message` says why. */
export const onEventReplySchema = z.object({
  ok: z.boolean(),
  ran: z.number().int(),
  message: z.string().optional(),
});
export type OnEventReply = z.infer<typeof onEventReplySchema>;

/** Deployed functions, their invocations and logs (sync-orchestrator answers). */
export const FUNCTIONS_API_REQUESTS = {
  list: natsRequest({
    subject: FUNCTIONS_API_SUBJECTS.list,
    request: listFunctionsRequestSchema,
    reply: listFunctionsResponseSchema,
  }),
  get: natsRequest({
    subject: FUNCTIONS_API_SUBJECTS.get,
    request: functionRequestSchema,
    reply: deployedFunctionSchema,
  }),
  code: natsRequest({
    subject: FUNCTIONS_API_SUBJECTS.code,
    request: functionRequestSchema,
    reply: functionCodeSchema,
  }),
  delete: natsRequest({
    subject: FUNCTIONS_API_SUBJECTS.delete,
    request: functionRequestSchema,
    reply: successReplySchema,
  }),
  scriptsConfig: natsRequest({
    subject: FUNCTIONS_API_SUBJECTS.scriptsConfig,
    request: scriptsConfigRequestSchema,
    reply: z.union([z.array(standardNangoConfigSchema), z.object({ data: z.array(openAiFunctionSchema) })]),
  }),
  actionResult: natsRequest({
    subject: FUNCTIONS_API_SUBJECTS.actionResult,
    request: invocationRequestSchema,
    reply: actionOutputReplySchema,
  }),
  listRuns: natsRequest({
    subject: FUNCTIONS_API_SUBJECTS.listRuns,
    request: listRunsRequestSchema,
    reply: actionRunsPageSchema,
  }),
  runLogs: natsRequest({
    subject: FUNCTIONS_API_SUBJECTS.runLogs,
    request: invocationRequestSchema,
    reply: runLogsResponseSchema.shape.data,
  }),
};

/** On-event scripts the other services wait for (sync-orchestrator answers). */
export const ON_EVENT_REQUESTS = {
  validateConnection: natsRequest({
    subject: ON_EVENT_SUBJECTS.validateConnection,
    request: validateConnectionRequestSchema,
    reply: onEventReplySchema,
  }),
  preConnectionDeletion: natsRequest({
    subject: ON_EVENT_SUBJECTS.preConnectionDeletion,
    request: onEventConnectionSchema,
    reply: onEventReplySchema,
  }),
};

/** What a running function asks of sync-orchestrator (its checkpoints, locks and nested actions). */
export const FUNCTION_HOST_REQUESTS = {
  checkpointGet: natsRequest({
    subject: FUNCTION_HOST_SUBJECTS.checkpointGet,
    request: checkpointGetRequestSchema,
    reply: checkpointReplySchema,
  }),
  checkpointSave: natsRequest({
    subject: FUNCTION_HOST_SUBJECTS.checkpointSave,
    request: checkpointSaveRequestSchema,
    reply: checkpointReplySchema,
  }),
  checkpointClear: natsRequest({
    subject: FUNCTION_HOST_SUBJECTS.checkpointClear,
    request: checkpointClearRequestSchema,
    reply: checkpointReplySchema,
  }),
  actionTrigger: natsRequest({
    subject: FUNCTION_HOST_SUBJECTS.actionTrigger,
    request: actionTriggerRequestSchema,
    reply: actionTriggerReplySchema,
  }),
  lockAcquire: natsRequest({
    subject: FUNCTION_HOST_SUBJECTS.lockAcquire,
    request: lockAcquireRequestSchema,
    reply: lockReplySchema,
  }),
  lockRelease: natsRequest({
    subject: FUNCTION_HOST_SUBJECTS.lockRelease,
    request: lockReleaseRequestSchema,
    reply: lockReplySchema,
  }),
  lockReleaseAll: natsRequest({
    subject: FUNCTION_HOST_SUBJECTS.lockReleaseAll,
    request: lockReleaseAllRequestSchema,
    reply: lockReplySchema,
  }),
};
