import type {
  CandidateConnection,
  Caller,
  FunctionRunRequest,
  FunctionType,
  MergingStrategyWire,
} from '@switchboard/contracts';
import type { z } from 'zod';

/** Everything a host call is scoped by. It comes from the run request, never from the script. */
export interface RunScope {
  caller: Caller;
  invocationId: string;
  /** The run request's attempt: a sync script's writes name it with the run id (the orchestrator fences them). */
  attempt: number;
  functionName: string;
  type: FunctionType;
  connectionId: string;
  providerConfigKey: string;
  provider: string;
  variant: string;
  /** Sync runs: the sync context of the run request (models, lastSyncDate, ...); the records calls need it. */
  sync?: FunctionRunRequest['sync'];
  /** Sync runs: `setMergingStrategy` per full model key, for the rest of the run. */
  merging: Map<string, MergingStrategyWire>;
  /**
   * validate-connection: the connection being validated, which the vault does not hold yet. The calls
   * that read the connection use it instead of the vault; the calls that would write it are refused.
   */
  candidate?: CandidateConnection;
  /** Whether the run took a lock (`tryAcquireLock`): its locks are released when it ends. */
  locks: { taken: boolean };
  /** The run's `depth` (how many triggerAction calls led to it). */
  depth: number;
  /** Aborted at the run's wall clock: provider calls in flight stop, new ones are refused. */
  deadline: AbortSignal;
  /** Aborted when the run is over (after the abort grace, a limit, or done): every call stops. */
  signal: AbortSignal;
  /**
   * Stops the run from outside, as its wall clock would (`script_aborted`): its sync run was cancelled, or
   * the orchestrator refused a write because the run is over (`sync_run_superseded`).
   */
  stop(reason: string): void;
  /** Runs `wait` without holding a run slot (for calls that wait on another run). */
  whileWaiting<T>(wait: () => Promise<T>): Promise<T>;
}

export interface HostCall<S extends z.ZodType> {
  /** Which function types may make the call: the capability set of a run is chosen by its type. */
  types: readonly FunctionType[];
  args: S;
  /**
   * The call may get its arguments as a structured copy of plain data instead of JSON text (the records
   * writes: sandbox.ts, `HostCallArgs`). They are checked by `args` just the same.
   */
  takesData?: boolean;
  run(scope: RunScope, args: z.infer<S>): Promise<unknown>;
}

/** One table entry, its argument schema erased (the dispatcher validates with it). */
export const entry = <S extends z.ZodType>(call: HostCall<S>) => call as unknown as HostCall<z.ZodType>;
