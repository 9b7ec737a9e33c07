import type {
  DeployedFunction,
  FlowConfig,
  FunctionType,
  OnEventType,
  OpenAiFunction,
  StandardNangoConfig,
} from '@switchboard/contracts';
import type { OrchestratorDb } from '@switchboard/db';

/** What a version stores besides its code: the flow config as deployed, in Nango's field names. */
export interface StoredConfig {
  description?: string;
  scopes: string[];
  input?: string;
  returns: string[];
  json_schema: Record<string, unknown> | null;
  endpoints: { method: string; path: string; group?: string }[];
  runs: string | null;
  auto_start: boolean;
  track_deletes: boolean;
  sync_type?: 'full' | 'incremental';
  webhookSubscriptions: string[];
  attributes: Record<string, unknown>;
  metadata: { description?: string; scopes?: string[] };
  features: string[];
  sdk_version: string | null;
}

/** A function row with its current version (without its code), as the repository reads it. */
export interface FunctionWithVersion {
  id: number;
  providerConfigKey: string;
  name: string;
  type: string;
  event: string | null;
  enabled: boolean;
  source: string;
  lastDeployedAt: Date;
  currentVersion: {
    id: string;
    version: string;
    sha256: string;
    config: unknown;
  } | null;
}

/**
 * The columns of a version read to list, deploy or run it: all but its code, which functions-runtime
 * asks for by hash (`orchestrator.v1.bundle.get`) and keeps, so a run reads no bundle here.
 */
export const VERSION_WITHOUT_CODE = { id: true, version: true, sha256: true, config: true } as const;

/** A function's current version as `FunctionWithVersion` holds it (a Prisma `include`). */
export const WITH_VERSION = { currentVersion: { select: VERSION_WITHOUT_CODE } } as const;

/** A version as a run request is made of it: by hash, and the function it belongs to (null once deleted). */
export const VERSION_TO_RUN = { ...VERSION_WITHOUT_CODE, functionId: true } as const;

/**
 * The bundle a run request carries inline: only when it names no function, so functions-runtime cannot
 * ask for it by hash (the version of a deleted function, kept for what still runs it). Else nothing is read.
 */
export async function inlineBundle(
  db: Pick<OrchestratorDb, 'functionVersion'>,
  versionId: string,
  functionId: number | null,
): Promise<{ code?: string }> {
  if (functionId !== null) return {};
  const version = await db.functionVersion.findUnique({ where: { id: versionId }, select: { codeJs: true } });
  return version ? { code: version.codeJs } : {};
}

export function configOfFlow(flow: FlowConfig, sdkVersion: string | undefined): StoredConfig {
  const description = flow.metadata?.description;
  return {
    ...(description !== undefined ? { description } : {}),
    scopes: flow.metadata?.scopes ?? [],
    ...(flow.input ? { input: flow.input } : {}),
    returns: flow.models,
    json_schema: flow.models_json_schema ?? null,
    endpoints: flow.endpoints ?? [],
    runs: flow.runs ?? null,
    auto_start: flow.type === 'sync' ? (flow.auto_start ?? false) : false,
    track_deletes: flow.track_deletes ?? false,
    ...(flow.type === 'sync' ? { sync_type: flow.sync_type ?? 'full' } : {}),
    webhookSubscriptions: flow.webhookSubscriptions ?? [],
    attributes: flow.attributes ?? {},
    metadata: { ...(description !== undefined ? { description } : {}), scopes: flow.metadata?.scopes ?? [] },
    features: flow.features ?? [],
    sdk_version: sdkVersion ?? null,
  };
}

export function configOfOnEvent(sdkVersion: string | undefined): StoredConfig {
  return {
    scopes: [],
    returns: [],
    json_schema: null,
    endpoints: [],
    runs: null,
    auto_start: false,
    track_deletes: false,
    webhookSubscriptions: [],
    attributes: {},
    metadata: {},
    features: [],
    sdk_version: sdkVersion ?? null,
  };
}

export const storedConfig = (fn: FunctionWithVersion): StoredConfig =>
  (fn.currentVersion?.config ?? configOfOnEvent(undefined)) as StoredConfig;

const source = (value: string): 'catalog' | 'standalone' | 'repo' =>
  value === 'standalone' || value === 'catalog' ? value : 'repo';

/** Nango's `DeployedNangoFunction` shape of one function. */
export function toDeployedFunction(fn: FunctionWithVersion): DeployedFunction {
  const config = storedConfig(fn);
  const availability = {
    id: fn.id,
    enabled: fn.enabled,
    last_deployed: fn.lastDeployedAt.toISOString(),
    source: source(fn.source),
  };
  const base = {
    name: fn.name,
    ...(config.description !== undefined ? { description: config.description } : {}),
    scopes: config.scopes,
  };
  const type = fn.type as FunctionType;
  switch (type) {
    case 'sync':
      return {
        type: 'sync',
        ...base,
        ...(config.input ? { input: config.input } : {}),
        returns: config.returns,
        json_schema: config.json_schema,
        runs: config.runs,
        auto_start: config.auto_start,
        track_deletes: config.track_deletes,
        ...availability,
      };
    case 'action':
      return {
        type: 'action',
        ...base,
        ...(config.input ? { input: config.input } : {}),
        returns: config.returns,
        json_schema: config.json_schema,
        ...availability,
      };
    case 'on-event':
      return { type: 'on-event', ...base, event: fn.event as OnEventType, ...availability };
    default: {
      const unknownType: never = type;
      return unknownType;
    }
  }
}

type NangoSyncConfig = StandardNangoConfig['syncs'][number];

/** Nango's `NangoSyncConfig` (what `GET /scripts/config` lists). */
export function toNangoSyncConfig(fn: FunctionWithVersion): NangoSyncConfig {
  const config = storedConfig(fn);
  return {
    name: fn.name,
    type: fn.type as FunctionType,
    runs: config.runs,
    auto_start: config.auto_start,
    attributes: config.attributes,
    ...(config.description !== undefined ? { description: config.description } : {}),
    scopes: config.scopes,
    metadata: config.metadata,
    track_deletes: config.track_deletes,
    returns: config.returns,
    endpoints: config.endpoints,
    source: source(fn.source),
    version: fn.currentVersion?.version ?? null,
    last_deployed: fn.lastDeployedAt.toISOString(),
    id: fn.id,
    ...(config.input ? { input: config.input } : {}),
    ...(config.sync_type ? { sync_type: config.sync_type } : {}),
    webhookSubscriptions: config.webhookSubscriptions,
    enabled: fn.enabled,
    json_schema: config.json_schema,
    sdk_version: config.sdk_version,
    features: config.features,
    models: modelsOf(config.json_schema),
    is_public: false,
    pre_built: fn.source === 'catalog',
  };
}

/** Nango's list of a zero-yaml function's models: the schema's definitions by name, without fields. */
function modelsOf(jsonSchema: Record<string, unknown> | null): { name: string; fields: unknown[] }[] {
  const definitions = jsonSchema?.definitions;
  if (!definitions || typeof definitions !== 'object') return [];
  return Object.keys(definitions).map((name) => ({ name, fields: [] }));
}

/**
 * An action as an OpenAI tool definition: its input model's JSON schema as `parameters` (an object
 * schema with no properties when the action takes no input, as a tool must still declare one).
 */
export function toOpenAiFunction(fn: FunctionWithVersion): OpenAiFunction {
  const config = storedConfig(fn);
  const definitions = (config.json_schema?.definitions ?? {}) as Record<string, unknown>;
  const input = config.input ? definitions[config.input] : undefined;
  const parameters =
    input && typeof input === 'object' && (input as { type?: unknown }).type === 'object'
      ? (input as Record<string, unknown>)
      : { type: 'object', properties: {} };
  return { name: fn.name, description: config.description ?? '', parameters };
}
