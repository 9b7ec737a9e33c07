import { z } from 'zod';
import { natsRequest } from './nats-request';
import { callerSchema } from './context';
import { credentialsSchema } from './internal-auth';

/**
 * The seam between sync-orchestrator (owns functions, versions, invocations) and functions-runtime (runs
 * one invocation in a sandbox, owns no data). The orchestrator asks; the runtime answers with the
 * outcome, a script failure included: a failing script is a normal answer, not a transport error.
 */
export const FUNCTIONS_SUBJECTS = {
  /** orchestrator → functions-runtime: run one invocation and answer with its outcome. */
  run: 'functions.v1.run',
  /**
   * orchestrator → every functions-runtime replica (a broadcast, no reply): stop the script of one
   * attempt of an invocation, as the wall clock would, with `script_aborted`. Sent when a sync run's
   * activity is cancelled (a full resync, a terminated or timed-out workflow), when the caller gave up on
   * an attempt whose lease went unanswered, and before an async action's attempt is run again after its
   * worker died. An attempt whose worker died cannot be told: its lease (below) runs out instead.
   */
  cancel: 'functions.v1.cancel',
  /**
   * orchestrator → every functions-runtime replica (a broadcast, sent as a request): the caller waiting for
   * this attempt of a run (a sync run's worker, an action's or on-event script's caller) is alive. A run
   * asked with `lease` is stopped (`script_aborted`) when no renewal came for `lease.ttlMs`: a killed
   * worker's script does not go on writing records and checkpoints (it could even finish and clear its
   * checkpoint) until Temporal has retried the run. The replica running the attempt answers each renewal
   * (`functionRunLeaseReplySchema`), the others stay silent: a caller that hears no answer for `ttlMs`
   * knows the replica running its script is gone (SIGKILLed, partitioned), ends its wait with
   * `function_runtime_lost` instead of waiting out the run's time limit, and stops the attempt.
   */
  lease: 'functions.v1.lease',
} as const;

/** A renewal of a run attempt's lease (`functions.v1.lease`). */
export const functionRunLeaseSchema = z.object({
  invocationId: z.string().uuid(),
  attempt: z.number().int().min(1),
});
export type FunctionRunLease = z.infer<typeof functionRunLeaseSchema>;

/** The answer of the replica running a leased attempt: it is still running it (queued for a slot, too). */
export const functionRunLeaseReplySchema = z.object({
  invocationId: z.string().uuid(),
  attempt: z.number().int().min(1),
  running: z.literal(true),
});
export type FunctionRunLeaseReply = z.infer<typeof functionRunLeaseReplySchema>;

export const functionRunCancelSchema = z.object({
  invocationId: z.string().uuid(),
  /** Only this attempt: another one (a retry already running elsewhere) is left alone. */
  attempt: z.number().int().min(1),
  reason: z.string().max(500),
});
export type FunctionRunCancel = z.infer<typeof functionRunCancelSchema>;

/** Calls a running script makes that only the orchestrator can answer (it owns checkpoints and actions). */
export const FUNCTION_HOST_SUBJECTS = {
  checkpointGet: 'orchestrator.v1.checkpoint.get',
  checkpointSave: 'orchestrator.v1.checkpoint.save',
  checkpointClear: 'orchestrator.v1.checkpoint.clear',
  /** Also what the gateway calls for `POST /action/trigger`. */
  actionTrigger: 'orchestrator.v1.action.trigger',
  /** `nango.tryAcquireLock` / `releaseLock` / `releaseAllLocks` (and the runtime when a run ends). */
  lockAcquire: 'orchestrator.v1.lock.acquire',
  lockRelease: 'orchestrator.v1.lock.release',
  lockReleaseAll: 'orchestrator.v1.lock.release-all',
} as const;

/** Deepest chain of scripts triggering actions (`nango.triggerAction`) the runtime lets through. */
export const MAX_ACTION_TRIGGER_DEPTH = 5;

export const FUNCTION_TYPES = ['sync', 'action', 'on-event'] as const;
export type FunctionType = (typeof FUNCTION_TYPES)[number];

export const ON_EVENT_TYPES = [
  'post-connection-creation',
  'pre-connection-deletion',
  'validate-connection',
] as const;
export type OnEventType = (typeof ON_EVENT_TYPES)[number];

/** Nango's script name alphabet (`action_name` on `/action/trigger`). */
export const functionNameSchema = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[a-zA-Z0-9_-]+$/, 'may hold only letters, digits, "_" and "-"');

/** A compiled bundle travels inline on NATS (default max payload 1 MiB); deploy refuses anything larger. */
export const MAX_FUNCTION_BUNDLE_BYTES = 768 * 1024;

/** Where the runtime fetches a bundle it does not hold yet, by its content hash (the orchestrator owns them). */
export const FUNCTION_BUNDLE_SUBJECTS = {
  get: 'orchestrator.v1.bundle.get',
} as const;

export const functionBundleRequestSchema = z.object({
  caller: callerSchema,
  /** The deployed function the bundle is a version of. */
  functionId: z.string(),
  codeSha256: z.string().regex(/^[0-9a-f]{64}$/),
});
export type FunctionBundleRequest = z.infer<typeof functionBundleRequestSchema>;

export const functionBundleReplySchema = z.object({ code: z.string().max(MAX_FUNCTION_BUNDLE_BYTES) });
export type FunctionBundleReply = z.infer<typeof functionBundleReplySchema>;

export const FUNCTION_BUNDLE_REQUESTS = {
  get: natsRequest({
    subject: FUNCTION_BUNDLE_SUBJECTS.get,
    request: functionBundleRequestSchema,
    reply: functionBundleReplySchema,
  }),
};

/**
 * The modules a function bundle may `require` (Nango allows url, crypto, zod, botbuilder, soap and unzipper;
 * the CLI keeps them out of the bundle). The functions runtime provides all of them inside its sandbox (`soap`
 * as a SOAP client of its own whose HTTP goes through the egress policy, `botbuilder` as its message and card
 * builders only); a bundle that requires anything else is refused at deploy (`unsupported_module`).
 */
export const FUNCTION_MODULES = [
  'zod',
  'url',
  'node:url',
  'crypto',
  'node:crypto',
  'unzipper',
  'soap',
  'botbuilder',
] as const;

/**
 * Modules the nango CLI lets a script import that this runtime does not provide, with why. None today: every
 * module of Nango's allow-list is provided (FUNCTION_MODULES).
 */
export const UNSUPPORTED_FUNCTION_MODULES: Readonly<Record<string, string>> = {};

/**
 * The modules a CommonJS bundle requires by a literal name, in order of first appearance. The CLI's esbuild
 * output names every external module this way; a computed `require(name)` is not seen here and fails at
 * run time as any module the runtime does not have.
 */
export function requiredModules(code: string): string[] {
  const found = new Set<string>();
  for (const match of code.matchAll(/\brequire\(\s*(["'`])([^"'`\n]{1,200})\1\s*\)/g)) found.add(match[2]!);
  return [...found];
}

/** Per-run limits; the runtime fills what is absent from its configured defaults, and caps what is present. */
export const functionRunLimitsSchema = z.object({
  memoryMb: z.number().int().min(8).max(4096).optional(),
  cpuTimeMs: z.number().int().positive().optional(),
  wallTimeMs: z.number().int().positive().optional(),
  outputBytes: z.number().int().positive().optional(),
});
export type FunctionRunLimits = z.infer<typeof functionRunLimitsSchema>;

/**
 * A connection not stored yet (a `validate-connection` run): what the end user just authorised. The run's
 * host calls (`proxy`, `getToken`, `getConnection`, `getMetadata`) use it instead of the vault's, and it
 * is never stored by the run.
 */
export const candidateConnectionSchema = z.object({
  credentials: credentialsSchema,
  connectionConfig: z.record(z.string(), z.unknown()),
  metadata: z.record(z.string(), z.unknown()).nullable().default(null),
});
export type CandidateConnection = z.infer<typeof candidateConnectionSchema>;

export const functionRunRequestSchema = z.object({
  /** The environment the run belongs to: every host call the script makes is scoped to it, never to script input. */
  caller: callerSchema,
  invocationId: z.string().uuid(),
  function: z.object({
    id: z.string(),
    name: functionNameSchema,
    type: z.enum(FUNCTION_TYPES),
    version: z.string(),
    /**
     * sha256 of the bundle, hex: the runtime keeps bundles by it, and asks the orchestrator for one it
     * does not hold (`FUNCTION_BUNDLE_SUBJECTS.get`), so a bundle does not travel with every run.
     */
    codeSha256: z.string().regex(/^[0-9a-f]{64}$/),
    /** The CommonJS bundle the CLI compiled (`fileBody.js`), when sent inline instead of by its hash. */
    code: z.string().max(MAX_FUNCTION_BUNDLE_BYTES).optional(),
    /** JSON schema of the action's input, when the script declared one (validated before the script runs). */
    inputJsonSchema: z.unknown().optional(),
    /** The function's deployed `attributes` (Nango's flow attributes): `nango.getFlowAttributes()`. */
    attributes: z.record(z.string(), z.unknown()).optional(),
  }),
  connection: z.object({
    connectionId: z.string(),
    providerConfigKey: z.string(),
    provider: z.string(),
  }),
  input: z.unknown().optional(),
  /** On-event scripts: which event fired. */
  event: z.enum(ON_EVENT_TYPES).optional(),
  /** validate-connection runs: the connection being validated, which the vault does not hold yet. */
  candidate: candidateConnectionSchema.optional(),
  /** Syncs: the variant being run, `base` by default. */
  variant: z.string().optional(),
  /**
   * Sync runs only: what the script's sync API (`batchSave`, `trackDeletes*`, `lastSyncDate`, ...) is scoped
   * by. For a sync, `invocationId` is the sync run's id and stays the same across the run's attempts: it is
   * the generation that records saved by the run carry, so a retried run that resumes from its checkpoint
   * does not make the records saved by an earlier attempt look unseen.
   */
  sync: z
    .object({
      /** The (connection, sync, variant) row the run belongs to. */
      syncId: z.string(),
      /** When the last successful run started (null for a first or full run): Nango's `lastSyncDate`. */
      lastSyncDate: z.string().datetime({ offset: true }).nullable(),
      /** The models the script declared (`models` of createSync), without variant. */
      models: z.array(z.string()),
      /** The script's `trackDeletes` flag (deprecated in Nango, still honoured). */
      trackDeletes: z.boolean().default(false),
      /** `full` after `opts.reset` / a full resync, `incremental` otherwise, `webhook` for an onWebhook run. */
      mode: z.enum(['incremental', 'full', 'webhook']).default('incremental'),
    })
    .optional(),
  attempt: z.number().int().min(1).default(1),
  limits: functionRunLimitsSchema.default({}),
  /**
   * The script runs only while its caller renews this lease (`functions.v1.lease`) at least every `ttlMs`;
   * the first renewal is due `ttlMs` after the request arrives (a run waiting for a slot is leased too).
   * The orchestrator leases every run (syncs, actions, on-event scripts); absent: no lease.
   */
  lease: z.object({ ttlMs: z.number().int().min(1_000).max(600_000) }).optional(),
  /**
   * How many `nango.triggerAction` calls led to this run (0 for a run the API started). The orchestrator
   * copies it from the trigger request; the runtime refuses a trigger past MAX_ACTION_TRIGGER_DEPTH, so an
   * action that triggers itself cannot pile up runs (each one holding a run slot) without end.
   */
  depth: z.number().int().min(0).default(0),
});
export type FunctionRunRequest = z.infer<typeof functionRunRequestSchema>;

export const FUNCTION_LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export const functionLogSchema = z.object({
  level: z.enum(FUNCTION_LOG_LEVELS),
  message: z.string(),
  at: z.string(),
});
export type FunctionLog = z.infer<typeof functionLogSchema>;

/**
 * Why a run failed. `action_script_runtime_error` is an `ActionError` the script threw on purpose (its
 * payload goes back to the caller as Nango does); the `script_*_limit` codes are the sandbox's limits.
 */
export const FUNCTION_FAILURE_CODES = [
  'action_script_runtime_error',
  'script_runtime_error',
  'script_invalid_input',
  'script_invalid_output',
  'script_load_error',
  'script_timeout',
  'script_cpu_limit',
  'script_memory_limit',
  'script_output_too_large',
  'script_aborted',
  /** The script asked for something its run may not do (another connection, a call its type lacks). */
  'script_forbidden_call',
] as const;
export type FunctionFailureCode = (typeof FUNCTION_FAILURE_CODES)[number];

/**
 * An output too large for one NATS message is put in the JetStream object store bucket named here, under
 * the invocation id; the reader deletes it once stored elsewhere.
 */
export const FUNCTION_OUTPUT_BUCKET = 'function-outputs';

const runStats = {
  logs: z.array(functionLogSchema),
  /** Log lines dropped past the per-run cap. */
  logsDropped: z.number().int().min(0).default(0),
  durationMs: z.number().min(0),
  cpuTimeMs: z.number().min(0).optional(),
};

export const functionRunResultSchema = z.discriminatedUnion('status', [
  z.object({
    status: z.literal('success'),
    /** The script's return value (JSON), inline, unless `outputRef` is set. */
    output: z.unknown().optional(),
    outputRef: z
      .object({ bucket: z.literal(FUNCTION_OUTPUT_BUCKET), name: z.string(), bytes: z.number().int() })
      .optional(),
    ...runStats,
  }),
  z.object({
    status: z.literal('failure'),
    error: z.object({
      code: z.enum(FUNCTION_FAILURE_CODES),
      message: z.string(),
      /**
       * `ActionError`'s payload, as the script gave it; for `script_invalid_input` / `script_invalid_output`
       * the zod issues.
       */
      payload: z.unknown().optional(),
      /** A coded error of a host call the script did not catch (`egress_refused`, `unknown_connection`, ...). */
      cause: z.object({ code: z.string() }).optional(),
    }),
    ...runStats,
  }),
]);
export type FunctionRunResult = z.infer<typeof functionRunResultSchema>;

const hostScope = {
  caller: callerSchema,
  connectionId: z.string(),
  providerConfigKey: z.string(),
  functionName: functionNameSchema,
  variant: z.string().default('base'),
};
/**
 * A sync run's checkpoint writes name the run (and its attempt): the orchestrator refuses them with
 * `sync_run_superseded` unless that run is still RUNNING and this is its latest attempt, so the script of
 * a cancelled, abandoned or retried run cannot move the checkpoint the sync's current run reads. Actions
 * and on-event scripts send neither.
 */
const writer = {
  runId: z.string().uuid().optional(),
  attempt: z.number().int().min(1).optional(),
};
export const checkpointGetRequestSchema = z.object(hostScope);
export const checkpointSaveRequestSchema = z.object({
  ...hostScope,
  ...writer,
  checkpoint: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])),
});
export const checkpointClearRequestSchema = z.object({ ...hostScope, ...writer });
export const checkpointReplySchema = z.object({
  checkpoint: checkpointSaveRequestSchema.shape.checkpoint.nullable(),
});
export type CheckpointReply = z.infer<typeof checkpointReplySchema>;

/**
 * A script's lock, per connection (as Nango's): `owner` is the run's invocation id, set by the runtime from
 * the run request. A lock is taken when its key is free or its holder's TTL ran out.
 */
const lockScope = {
  caller: callerSchema,
  connectionId: z.string(),
  providerConfigKey: z.string(),
  owner: z.string().uuid(),
};
/** Longest lock a script may ask for (a sync's wall clock). */
export const MAX_LOCK_TTL_MS = 24 * 60 * 60 * 1000;
export const lockAcquireRequestSchema = z.object({
  ...lockScope,
  key: z.string().min(1).max(255),
  ttlMs: z.number().int().min(1).max(MAX_LOCK_TTL_MS),
});
export const lockReleaseRequestSchema = z.object({ ...lockScope, key: z.string().min(1).max(255) });
export const lockReleaseAllRequestSchema = z.object(lockScope);
export const lockReplySchema = z.object({ ok: z.boolean() });
export type LockReply = z.infer<typeof lockReplySchema>;

export const actionTriggerRequestSchema = z.object({
  caller: callerSchema,
  connectionId: z.string(),
  providerConfigKey: z.string(),
  actionName: functionNameSchema,
  input: z.unknown().optional(),
  async: z.boolean().default(false),
  maxRetries: z.number().int().min(0).max(5).default(0),
  /** Set by functions-runtime for a script's `nango.triggerAction`: the triggering run's depth + 1. */
  depth: z.number().int().min(0).default(0),
  /**
   * The run id of a synchronous action, chosen by the caller (the gateway names it in
   * `X-Switchboard-Run-Id` whether the run succeeds or fails); a fresh one when absent.
   */
  invocationId: z.string().uuid().optional(),
});
export type ActionTriggerRequest = z.infer<typeof actionTriggerRequestSchema>;

/** Running a function (functions-runtime answers). */
export const FUNCTIONS_REQUESTS = {
  run: natsRequest({
    subject: FUNCTIONS_SUBJECTS.run,
    request: functionRunRequestSchema,
    reply: functionRunResultSchema,
  }),
};
