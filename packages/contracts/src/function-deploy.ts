import { z } from 'zod';
import { natsRequest } from './nats-request';
import { callerSchema } from './context';
import { functionNameSchema, MAX_FUNCTION_BUNDLE_BYTES, ON_EVENT_TYPES } from './functions';

/**
 * What `nango deploy` (CLI 0.71.x) sends to `POST /sync/deploy/confirmation` and `POST /sync/deploy`, and
 * what it needs back. Objects are not strict: newer CLIs add keys, and refusing them would break deploys
 * for no gain (unknown keys are dropped).
 */
export const DEPLOY_SUBJECTS = {
  /** gateway → orchestrator: what a deploy would change (`ScriptDifferences`), nothing stored. */
  confirm: 'orchestrator.v1.deploy.confirm',
  /** gateway → orchestrator: store the functions, answer `SyncDeploymentResult[]`. */
  apply: 'orchestrator.v1.deploy.apply',
} as const;

/**
 * A deploy body too large for one NATS message is put in this JetStream object store bucket by the
 * gateway under a fresh id, and the orchestrator reads (then deletes) it.
 */
export const DEPLOY_PAYLOAD_BUCKET = 'function-deploys';

/** Oldest CLI whose deploy payload we understand (Nango refuses older ones the same way). */
export const MIN_CLI_VERSION = '0.39.25';

const fileBodySchema = z.object({
  js: z
    .string()
    .min(1, 'the compiled bundle is empty')
    .max(MAX_FUNCTION_BUNDLE_BYTES, `the compiled bundle is larger than ${MAX_FUNCTION_BUNDLE_BYTES} bytes`),
  ts: z
    .string()
    .max(4 * MAX_FUNCTION_BUNDLE_BYTES)
    .optional(),
});

export const deployEndpointSchema = z.object({
  method: z.string().min(1).max(10),
  path: z.string().min(1).max(1024),
  group: z.string().max(255).optional(),
});

export const flowConfigSchema = z.object({
  syncName: functionNameSchema,
  providerConfigKey: z.string().min(1).max(255),
  type: z.enum(['sync', 'action']),
  models: z.array(z.string().max(255)).max(100).default([]),
  /** `""` when the script sets none: the server picks one. */
  version: z.string().max(64).optional(),
  runs: z.string().max(255).nullable().optional(),
  auto_start: z.boolean().optional(),
  track_deletes: z.boolean().optional(),
  attributes: z.record(z.string(), z.unknown()).optional(),
  metadata: z
    .object({ description: z.string().max(4096).optional(), scopes: z.array(z.string()).optional() })
    .optional(),
  input: z.string().max(255).optional(),
  sync_type: z.enum(['full', 'incremental']).optional(),
  fileBody: fileBodySchema,
  endpoints: z.array(deployEndpointSchema).max(100).optional(),
  webhookSubscriptions: z.array(z.string()).optional(),
  models_json_schema: z.record(z.string(), z.unknown()).nullable().optional(),
  features: z.array(z.string()).optional(),
});
export type FlowConfig = z.infer<typeof flowConfigSchema>;

export const onEventScriptsByProviderSchema = z.array(
  z.object({
    providerConfigKey: z.string().min(1).max(255),
    scripts: z.array(
      z.object({ name: functionNameSchema, event: z.enum(ON_EVENT_TYPES), fileBody: fileBodySchema }),
    ),
  }),
);

export const DEPLOY_MODES = ['all', 'integration', 'single'] as const;
export type DeployMode = (typeof DEPLOY_MODES)[number];

export const deployBodySchema = z.object({
  /** A whole project in one deploy: large ones have ~1,700 functions over ~35 integrations. */
  flowConfigs: z.array(flowConfigSchema).max(10_000),
  onEventScriptsByProvider: onEventScriptsByProviderSchema.optional(),
  /** `all`: the whole environment; `integration`: the integrations in the body; `single`: upsert only. */
  deployMode: z.enum(DEPLOY_MODES).optional(),
  /** Older CLIs' way of saying `deployMode: single`. */
  singleDeployMode: z.boolean().optional(),
  reconcile: z.boolean().default(false),
  debug: z.boolean().optional(),
  nangoYamlBody: z.string().nullable().optional(),
  sdkVersion: z.string().max(64).optional(),
  source: z.enum(['repo', 'standalone']).optional(),
});
export type DeployBody = z.infer<typeof deployBodySchema>;

/** Either the body itself or where the gateway put it (see DEPLOY_PAYLOAD_BUCKET). */
export const deployRequestSchema = z.object({
  caller: callerSchema,
  body: deployBodySchema.optional(),
  bodyRef: z.string().uuid().optional(),
});
export type DeployRequest = z.infer<typeof deployRequestSchema>;

const slimSyncSchema = z.object({
  name: z.string(),
  providerConfigKey: z.string(),
  auto_start: z.boolean(),
  connections: z.number().int(),
  id: z.number().int().optional(),
});
const slimActionSchema = z.object({
  name: z.string(),
  providerConfigKey: z.string(),
  id: z.number().int().optional(),
});
const slimOnEventSchema = z.object({
  name: z.string(),
  providerConfigKey: z.string(),
  event: z.enum(ON_EVENT_TYPES),
});

/** The plan the CLI prints; every list must be present or the CLI crashes. */
export const scriptDifferencesSchema = z
  .object({
    newSyncs: z.array(slimSyncSchema),
    updatedSyncs: z.array(slimSyncSchema),
    deletedSyncs: z.array(slimSyncSchema),
    newActions: z.array(slimActionSchema),
    updatedActions: z.array(slimActionSchema),
    deletedActions: z.array(slimActionSchema),
    newOnEventScripts: z.array(slimOnEventSchema),
    updatedOnEventScripts: z.array(slimOnEventSchema),
    deletedOnEventScripts: z.array(slimOnEventSchema),
    deletedModels: z.array(z.string()),
  })
  .meta({ id: 'ScriptDifferences' });
export type ScriptDifferences = z.infer<typeof scriptDifferencesSchema>;

export const syncDeploymentResultSchema = z
  .object({
    name: z.string(),
    version: z.string(),
    providerConfigKey: z.string(),
    /** On-event scripts are listed too, with no models (the CLI prints every entry). */
    type: z.enum(['sync', 'action', 'on-event']),
    models: z.array(z.string()),
    id: z.number().int(),
  })
  .meta({ id: 'SyncDeploymentResult' });
export type SyncDeploymentResult = z.infer<typeof syncDeploymentResultSchema>;

/**
 * Deploys (sync-orchestrator answers). The caller does not check the body again: the gateway validated
 * it, and it carries every bundle of the deploy.
 */
export const DEPLOY_REQUESTS = {
  confirm: natsRequest({
    subject: DEPLOY_SUBJECTS.confirm,
    request: deployRequestSchema,
    reply: scriptDifferencesSchema,
    validateOnSend: false,
  }),
  apply: natsRequest({
    subject: DEPLOY_SUBJECTS.apply,
    request: deployRequestSchema,
    reply: z.array(syncDeploymentResultSchema),
    validateOnSend: false,
  }),
};
