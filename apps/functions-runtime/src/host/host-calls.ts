import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  MAX_ACTION_TRIGGER_DEPTH,
  SYNC_MODES,
  SwitchboardError,
  checkpointSaveRequestSchema,
  syncIdentifierSchema,
  syncModeFlags,
  toSyncIdentifier,
  type ApiPublicConnectionFull,
  type CandidateConnection,
  type ConnectionCredentials,
  type FunctionType,
  MAX_LOCK_TTL_MS,
  CONNECTIONS_API_REQUESTS,
  ENVIRONMENT_VARIABLE_REQUESTS,
  FUNCTION_HOST_REQUESTS,
  INTEGRATION_REQUESTS,
  PROVIDER_REQUESTS,
  SYNC_REQUESTS,
  VAULT_REQUESTS,
} from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import { z } from 'zod';
import { FUNCTIONS_RUNTIME_ENV, type FunctionsRuntimeEnv } from '../config/env';
import type { HostCallArgs } from '../sandbox/sandbox';
import { entry, type HostCall, type RunScope } from './host-call';
import { HostCallError } from './host-call.errors';
import { ProxyClient, proxyArgsSchema } from './proxy-client';
import { recordsHostCalls } from './records-host-calls';
import { UncontrolledFetch, uncontrolledFetchArgsSchema } from './uncontrolled-fetch';

export type { RunScope } from './host-call';

/** What the orchestrator answers a synchronous trigger with (only `output` matters here). */
const syncTriggerReply = z.object({ async: z.literal(false), output: z.unknown() });

/** Largest JSON a script may send in one host call (a proxied body or a metadata object). */
const MAX_ARGS_CHARS = 16 * 1024 * 1024;

const ALL: readonly FunctionType[] = ['action', 'on-event', 'sync'];
const jsonObject = z.record(z.string(), z.unknown());
const optionalKey = z.string().max(255).nullish();

const connectionKey = (s: RunScope) => ({
  caller: s.caller,
  connectionId: s.connectionId,
  providerConfigKey: s.providerConfigKey,
});
const hostScope = (s: RunScope) => ({
  ...connectionKey(s),
  functionName: s.functionName,
  variant: s.variant,
});
// A sync run's checkpoint writes name the run and attempt: the orchestrator refuses them once it is over.
const checkpointWriter = (s: RunScope) =>
  s.type === 'sync' ? { runId: s.invocationId, attempt: s.attempt } : {};

/** The connection a call names must be the run's own; naming none means the run's own. */
function ownConnection(scope: RunScope, providerConfigKey?: string | null, connectionId?: string | null) {
  if (
    (providerConfigKey && providerConfigKey !== scope.providerConfigKey) ||
    (connectionId && connectionId !== scope.connectionId)
  ) {
    throw new HostCallError('script_forbidden_call', 'a function may only use the connection it runs for');
  }
}

/** A validate-connection run may not write a connection that does not exist yet. */
function notWhileValidating(scope: RunScope, call: string): void {
  if (scope.candidate) {
    throw new HostCallError(
      'script_forbidden_call',
      `nango.${call} is not available while the connection is validated: it is not stored yet`,
    );
  }
}

/** `getConnection()` of a connection not stored yet: the fields a stored one would have, from the candidate. */
function candidateConnection(scope: RunScope, candidate: CandidateConnection): ApiPublicConnectionFull {
  const now = new Date().toISOString();
  return {
    id: 0,
    connection_id: scope.connectionId,
    provider_config_key: scope.providerConfigKey,
    provider: scope.provider,
    errors: [],
    end_user: null,
    tags: {},
    metadata: candidate.metadata,
    connection_config: candidate.connectionConfig,
    webhook_url_override: null,
    created_at: now,
    updated_at: now,
    last_fetched_at: null,
    credentials: candidate.credentials,
  };
}

/**
 * Nango's `getToken()` (its node client's, which the runner's SDK calls): the access token of an OAuth 2
 * connection, the token and secret of an OAuth 1 one, and the whole credentials object for every other
 * type (`(await nango.getToken()).apiKey`, `.username`, ...).
 */
function tokenOf(credentials: ConnectionCredentials['credentials']): unknown {
  const c = credentials as Record<string, unknown>;
  switch (c.type) {
    case 'OAUTH2':
      return c.access_token;
    case 'OAUTH1':
      return { oAuthToken: c.oauth_token, oAuthTokenSecret: c.oauth_token_secret };
    default:
      return c;
  }
}

/**
 * The one table of what a script's `nango` object can ask the host for. Each entry names the function
 * types that get it, validates what the script sent, and runs scoped by the run (environment and
 * connection from the request). The sync calls (`batchSave`, `getRecordsByIds`, `trackDeletes*`, ...) are
 * in `records-host-calls.ts`, with `types: ['sync']`.
 */
@Injectable()
export class HostCalls {
  private readonly logger = new Logger('HostCalls');
  private readonly table: Record<string, HostCall<z.ZodType>>;

  constructor(
    private readonly nats: NatsRequester,
    private readonly proxy: ProxyClient,
    private readonly fetcher: UncontrolledFetch,
    @Inject(FUNCTIONS_RUNTIME_ENV) private readonly env: FunctionsRuntimeEnv,
  ) {
    this.table = this.build();
  }

  /** Names of the calls a function type gets (for the README's capability table and tests). */
  capabilities(type: FunctionType): string[] {
    return Object.entries(this.table)
      .filter(([, call]) => call.types.includes(type))
      .map(([name]) => name);
  }

  /** A run that took locks ends: whatever it still holds is released (Nango releases them when a script ends). */
  async releaseLocks(scope: RunScope): Promise<void> {
    if (!scope.locks.taken) return;
    try {
      await this.nats.call(FUNCTION_HOST_REQUESTS.lockReleaseAll, this.lockScope(scope));
    } catch (error) {
      // They expire with their TTL anyway.
      this.logger.warn(`releasing the locks of a run failed: ${(error as Error)?.name ?? typeof error}`);
    }
  }

  private lockScope(s: RunScope) {
    return {
      caller: s.caller,
      connectionId: s.connectionId,
      providerConfigKey: s.providerConfigKey,
      owner: s.invocationId,
    };
  }

  /**
   * Runs one call the script made and answers with a JSON envelope (`{ok, value}` or `{ok:false, error}`)
   * that the sandbox turns into a value or a thrown Error. Never rejects: a failure is the script's to handle.
   *
   * The arguments are parsed and the call started synchronously; only its promise is awaited. An async
   * function keeps everything it holds across an await, and a batch's JSON text (~1 MB) and records kept
   * for a NATS round trip outlive young-generation collections and pile up until a full one
   * (bench/README.md, "Why the current settings").
   */
  dispatch(scope: RunScope, name: string, args: HostCallArgs): Promise<string> {
    try {
      return this.answer(scope, name, this.start(scope, name, args));
    } catch (error) {
      return Promise.resolve(this.failure(scope, name, error));
    }
  }

  private start(scope: RunScope, name: string, args: HostCallArgs): Promise<unknown> {
    const call = Object.hasOwn(this.table, name) ? this.table[name] : undefined;
    if (!call || !call.types.includes(scope.type)) {
      throw new HostCallError(
        'script_forbidden_call',
        `nango.${name} is not available to ${scope.type} functions`,
      );
    }
    let value: unknown;
    if ('data' in args) {
      if (!call.takesData) {
        throw new HostCallError('invalid_arguments', `nango.${name} takes its arguments as JSON text`);
      }
      value = args.data;
    } else {
      if (args.json.length > MAX_ARGS_CHARS) {
        throw new HostCallError(
          'invalid_arguments',
          `nango.${name}: the arguments are over ${MAX_ARGS_CHARS} characters`,
        );
      }
      value = JSON.parse(args.json);
    }
    const parsed = call.args.safeParse(value);
    if (!parsed.success) {
      throw new HostCallError(
        'invalid_arguments',
        `nango.${name}: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'arguments'}: ${i.message}`).join('; ')}`,
      );
    }
    if (scope.signal.aborted) throw new HostCallError('script_aborted', 'the run has ended');
    return call.run(scope, parsed.data);
  }

  private async answer(scope: RunScope, name: string, running: Promise<unknown>): Promise<string> {
    try {
      return JSON.stringify({ ok: true, value: (await running) ?? null });
    } catch (error) {
      return this.failure(scope, name, error);
    }
  }

  private failure(scope: RunScope, name: string, error: unknown): string {
    // The sync run is over (a full resync cancelled it, or a retry replaced this attempt): the script
    // may not go on, whether or not it catches the error.
    if (error instanceof SwitchboardError && error.code === 'sync_run_superseded') {
      scope.stop(`nango.${name} was refused (${error.code}): ${error.message}`);
    }
    if (error instanceof HostCallError || error instanceof SwitchboardError) {
      return JSON.stringify({ ok: false, error: { code: error.code, message: error.message } });
    }
    // Messages may quote credentials or the script's data (JSON parse errors quote their input): only
    // the kind of failure is logged, and the script gets a generic one.
    this.logger.error(`host call ${name} failed: ${(error as Error)?.name ?? typeof error}`);
    return JSON.stringify({ ok: false, error: { code: 'server_error', message: `nango.${name} failed` } });
  }

  private build(): Record<string, HostCall<z.ZodType>> {
    return {
      ...this.connectionCalls(),
      ...this.metadataWriteCalls(),
      ...this.environmentCalls(),
      ...this.controlCalls(),
      ...this.lockCalls(),
      ...this.checkpointCalls(),
      ...recordsHostCalls(this.nats),
    };
  }

  /** The run's connection with its credentials; while it is validated, the candidate not stored yet. */
  private connectionOf(s: RunScope): Promise<ApiPublicConnectionFull> {
    return s.candidate
      ? Promise.resolve(candidateConnection(s, s.candidate))
      : this.nats.call(CONNECTIONS_API_REQUESTS.get, {
          ...connectionKey(s),
          includeCredentials: true,
          includeRefreshToken: false,
          forceRefresh: false,
          refreshGithubAppJwtToken: false,
        });
  }

  /** The run's connection, its token and metadata, its integration, and requests through the proxy. */
  private connectionCalls(): Record<string, HostCall<z.ZodType>> {
    return {
      proxy: entry({
        types: ALL,
        args: proxyArgsSchema,
        run: (s, args) => {
          ownConnection(s, args.providerConfigKey, args.connectionId);
          if (s.deadline.aborted) throw new HostCallError('script_aborted', 'the run is out of time');
          return this.proxy.send(
            { ...connectionKey(s), ...(s.candidate ? { candidate: s.candidate, provider: s.provider } : {}) },
            args,
            s.deadline,
          );
        },
      }),
      paginateDefaults: entry({
        types: ALL,
        args: z.unknown(),
        run: async (s) => {
          const provider = await this.nats.call(PROVIDER_REQUESTS.get, { name: s.provider });
          const proxy = (provider as { proxy?: { paginate?: unknown } }).proxy;
          return proxy?.paginate ?? null;
        },
      }),
      getConnection: entry({
        types: ALL,
        args: z.object({ providerConfigKey: optionalKey, connectionId: optionalKey }),
        run: (s, args) => {
          ownConnection(s, args.providerConfigKey, args.connectionId);
          return this.connectionOf(s);
        },
      }),
      getToken: entry({
        types: ALL,
        args: z.unknown(),
        run: async (s) => {
          if (s.candidate) return tokenOf(s.candidate.credentials);
          const found = await this.nats.call(VAULT_REQUESTS.credentials, {
            environmentId: s.caller.environmentId,
            providerConfigKey: s.providerConfigKey,
            connectionId: s.connectionId,
            forceRefresh: false,
          });
          return tokenOf(found.credentials);
        },
      }),
      getMetadata: entry({
        types: ALL,
        args: z.unknown(),
        run: async (s) => (await this.connectionOf(s)).metadata ?? {},
      }),
      // The run's own integration, as Nango's: its client secret only with include: ['credentials'] (README,
      // "getIntegration"). Another integration is refused.
      getIntegration: entry({
        types: ALL,
        args: z.object({
          include: z
            .array(z.enum(['webhook', 'credentials']))
            .max(2)
            .default([]),
        }),
        run: (s, args) =>
          this.nats.call(INTEGRATION_REQUESTS.get, {
            caller: s.caller,
            uniqueKey: s.providerConfigKey,
            include: {
              webhook: args.include.includes('webhook'),
              credentials: args.include.includes('credentials'),
            },
          }),
      }),
    };
  }

  /** Writes of the run's connection metadata (refused while the connection is validated). */
  private metadataWriteCalls(): Record<string, HostCall<z.ZodType>> {
    return {
      setMetadata: entry({
        types: ALL,
        args: z.object({ metadata: jsonObject, providerConfigKey: optionalKey, connectionId: optionalKey }),
        run: (s, args) => {
          ownConnection(s, args.providerConfigKey, args.connectionId);
          notWhileValidating(s, 'setMetadata');
          return this.nats.call(CONNECTIONS_API_REQUESTS.setMetadata, {
            caller: s.caller,
            body: {
              connection_id: s.connectionId,
              provider_config_key: s.providerConfigKey,
              metadata: args.metadata,
            },
          });
        },
      }),
      updateMetadata: entry({
        types: ALL,
        args: z.object({ metadata: jsonObject, providerConfigKey: optionalKey, connectionId: optionalKey }),
        run: (s, args) => {
          ownConnection(s, args.providerConfigKey, args.connectionId);
          notWhileValidating(s, 'updateMetadata');
          return this.nats.call(CONNECTIONS_API_REQUESTS.updateMetadata, {
            caller: s.caller,
            body: {
              connection_id: s.connectionId,
              provider_config_key: s.providerConfigKey,
              metadata: args.metadata,
            },
          });
        },
      }),
    };
  }

  /** The environment's variables and webhook URL, and requests to any URL without credentials. */
  private environmentCalls(): Record<string, HostCall<z.ZodType>> {
    return {
      getEnvironmentVariables: entry({
        types: ALL,
        args: z.unknown(),
        run: (s) => this.nats.call(ENVIRONMENT_VARIABLE_REQUESTS.list, { caller: s.caller }),
      }),
      getWebhookURL: entry({
        types: ALL,
        args: z.unknown(),
        run: (s) => {
          const base = this.env.SWITCHBOARD_SERVER_URL.replace(/\/+$/, '');
          return Promise.resolve(
            `${base}/webhook/${s.caller.environmentUuid}/${encodeURIComponent(s.providerConfigKey)}`,
          );
        },
      }),
      // A request to any URL, without connection credentials, through the egress policy (uncontrolled-fetch.ts).
      uncontrolledFetch: entry({
        types: ALL,
        args: uncontrolledFetchArgsSchema,
        run: (s, args) => {
          if (s.deadline.aborted) throw new HostCallError('script_aborted', 'the run is out of time');
          return this.fetcher.send(args, s.deadline);
        },
      }),
    };
  }

  /** Actions and syncs a script starts on any connection of its environment. */
  private controlCalls(): Record<string, HostCall<z.ZodType>> {
    return {
      // Nango lets a script trigger an action on any connection of its environment; the environment is
      // still the run's own (the orchestrator scopes by `caller`).
      triggerAction: entry({
        types: ALL,
        args: z.object({
          providerConfigKey: z.string().min(1).max(255),
          connectionId: z.string().min(1).max(255),
          actionName: z.string().min(1).max(255),
          input: z.unknown().optional(),
        }),
        run: async (s, args) => {
          if (s.depth + 1 > MAX_ACTION_TRIGGER_DEPTH) {
            throw new HostCallError(
              'script_forbidden_call',
              `nango.triggerAction: actions may trigger actions at most ${MAX_ACTION_TRIGGER_DEPTH} deep`,
            );
          }
          const reply = await s.whileWaiting(() =>
            this.nats.call(
              FUNCTION_HOST_REQUESTS.actionTrigger,
              {
                caller: s.caller,
                providerConfigKey: args.providerConfigKey,
                connectionId: args.connectionId,
                actionName: args.actionName,
                input: args.input,
                async: false,
                depth: s.depth + 1,
              },
              // The triggered action may run as long as this one may.
              {
                timeoutMs:
                  this.env.FUNCTIONS_ACTION_WALL_LIMIT_MS + this.env.FUNCTIONS_ABORT_GRACE_MS + 5_000,
              },
            ),
          );
          // As Nango's: the script gets the triggered action's output (the orchestrator wraps it).
          const sync = syncTriggerReply.safeParse(reply);
          return sync.success ? sync.data.output : reply;
        },
      }),
      // Sync control, as a script's `nango.triggerSync` / `nango.startSync` (Nango's runner passes them to its
      // node client): any connection of the run's environment, which the orchestrator scopes by `caller`.
      triggerSync: entry({
        types: ALL,
        args: z.object({
          providerConfigKey: z.string().min(1).max(255),
          connectionId: z.string().min(1).max(255),
          sync: syncIdentifierSchema,
          syncMode: z.union([z.enum(SYNC_MODES), z.boolean()]).nullish(),
        }),
        run: async (s, args) => {
          await this.nats.call(SYNC_REQUESTS.trigger, {
            caller: s.caller,
            providerConfigKey: args.providerConfigKey,
            connectionId: args.connectionId,
            syncs: [toSyncIdentifier(args.sync)],
            ...syncModeFlags(args.syncMode ?? undefined),
          });
          return null;
        },
      }),
      startSync: entry({
        types: ALL,
        args: z.object({
          providerConfigKey: z.string().min(1).max(255),
          syncs: z.array(syncIdentifierSchema).max(256),
          connectionId: optionalKey,
        }),
        run: async (s, args) => {
          await this.nats.call(SYNC_REQUESTS.start, {
            caller: s.caller,
            providerConfigKey: args.providerConfigKey,
            ...(args.connectionId ? { connectionId: args.connectionId } : {}),
            syncs: args.syncs.map(toSyncIdentifier),
          });
          return null;
        },
      }),
    };
  }

  /** Cross-run locks of the run's connection. */
  private lockCalls(): Record<string, HostCall<z.ZodType>> {
    return {
      // Cross-run locks of the run's connection, held by this run (its invocation id) until released, until
      // the run ends, or until their TTL runs out.
      tryAcquireLock: entry({
        types: ALL,
        args: z.object({
          key: z.string().min(1).max(255),
          ttlMs: z.number().int().min(1).max(MAX_LOCK_TTL_MS),
        }),
        run: async (s, args) => {
          s.locks.taken = true;
          const reply = await this.nats.call(FUNCTION_HOST_REQUESTS.lockAcquire, {
            ...this.lockScope(s),
            key: args.key,
            ttlMs: args.ttlMs,
          });
          return reply.ok;
        },
      }),
      releaseLock: entry({
        types: ALL,
        args: z.object({ key: z.string().min(1).max(255) }),
        run: async (s, args) =>
          (
            await this.nats.call(FUNCTION_HOST_REQUESTS.lockRelease, {
              ...this.lockScope(s),
              key: args.key,
            })
          ).ok,
      }),
      releaseAllLocks: entry({
        types: ALL,
        args: z.unknown(),
        run: async (s) => {
          await this.nats.call(FUNCTION_HOST_REQUESTS.lockReleaseAll, this.lockScope(s));
          return null;
        },
      }),
    };
  }

  /** The function's checkpoint for the run's connection. */
  private checkpointCalls(): Record<string, HostCall<z.ZodType>> {
    return {
      getCheckpoint: entry({
        types: ALL,
        args: z.unknown(),
        run: async (s) =>
          (await this.nats.call(FUNCTION_HOST_REQUESTS.checkpointGet, hostScope(s))).checkpoint,
      }),
      saveCheckpoint: entry({
        types: ALL,
        args: z.object({ checkpoint: checkpointSaveRequestSchema.shape.checkpoint }),
        run: async (s, args) => {
          await this.nats.call(FUNCTION_HOST_REQUESTS.checkpointSave, {
            ...hostScope(s),
            ...checkpointWriter(s),
            checkpoint: args.checkpoint,
          });
          return null;
        },
      }),
      clearCheckpoint: entry({
        types: ALL,
        args: z.unknown(),
        run: async (s) => {
          await this.nats.call(FUNCTION_HOST_REQUESTS.checkpointClear, {
            ...hostScope(s),
            ...checkpointWriter(s),
          });
          return null;
        },
      }),
    };
  }
}
