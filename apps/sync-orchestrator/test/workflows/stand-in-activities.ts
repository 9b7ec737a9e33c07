import { randomUUID } from 'node:crypto';
import type { Caller } from '@switchboard/contracts';
import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError, type WorkflowClient } from '@temporalio/client';
import type { ActionActivities, InvocationWorkflowInput } from '../../src/activities/action.activities';
import type { SyncActivities } from '../../src/activities/sync.activities';
import type { BegunSyncRun, SyncBusy, SyncRunHolder, SyncRunOutcome } from '../../src/syncs/sync-runner';

/**
 * Activities standing in for the runtime's in the workflow tests: the workflows' protocol (who runs when,
 * what is cancelled, what is retried) is the subject here, so the sync's state is kept in memory with the
 * rules of `SyncRunner` (one run holds a sync; a full resync is taken by the next run that begins; a run is
 * closed once), and a script is a gate the test opens. What the real activities do against Postgres, NATS
 * and functions-runtime is covered end to end (e2e/test/syncs.e2e-spec.ts, functions-*.e2e-spec.ts).
 */

const CALLER: Caller = {
  accountId: 1,
  environmentId: 1,
  environmentUuid: '00000000-0000-4000-8000-000000000001',
  environmentName: 'dev',
};

interface StandInRun {
  runId: string;
  workflowId: string;
  webhook: boolean;
  /** The full resync this run took as it began (it cleared `resetPending`). */
  tookReset: boolean;
  outcome?: SyncRunOutcome;
}

/** One sync row and its runs, as the stand-in activities keep them. */
export class StandInSync {
  readonly id = randomUUID();
  /** `reset_pending`: a full resync was asked for and no run has taken it yet. */
  resetPending = false;
  /** The run holding the sync (its RUNNING scheduled or triggered run). */
  holder: SyncRunHolder | undefined;
  readonly runs: StandInRun[] = [];
  /** What happened, in order: `begin <n>`, `busy`, `script <n>#<attempt>`, `finish <n> <status>`, ... */
  readonly log: string[] = [];
  /** Script attempts (Temporal's attempt numbers) that fail as a lost worker or runtime would. */
  failingAttempts = new Set<number>();
  /** While true, a script runs until `releaseScript` (or its cancellation); else it succeeds at once. */
  holdScripts = false;
  /** The most scripts of this sync that ever ran at once (webhook runs aside). */
  mostAtOnce = 0;
  private running = 0;
  private readonly waiting: { open: () => void }[] = [];

  /** The run's number: 1 for the sync's first run. */
  numberOf(runId: string): number {
    return this.runs.findIndex((r) => r.runId === runId) + 1;
  }

  /** Lets the oldest script that waits finish (succeeded). */
  releaseScript(): void {
    const next = this.waiting.shift();
    if (!next) throw new Error('no script is waiting');
    next.open();
  }

  /** Lets every script finish, now and from now on. */
  releaseAll(): void {
    this.holdScripts = false;
    for (const next of this.waiting.splice(0)) next.open();
  }

  get scriptsWaiting(): number {
    return this.waiting.length;
  }

  /** @internal */
  enterScript(webhook: boolean): () => void {
    if (webhook) return () => undefined;
    this.running += 1;
    this.mostAtOnce = Math.max(this.mostAtOnce, this.running);
    return () => {
      this.running -= 1;
    };
  }

  /** @internal Resolves once the script may finish; a cancelled script leaves the line. */
  async gate(cancelled: Promise<never>): Promise<void> {
    if (!this.holdScripts) return;
    let entry: { open: () => void } | undefined;
    const opened = new Promise<void>((resolve) => {
      entry = { open: resolve };
      this.waiting.push(entry);
    });
    try {
      await Promise.race([opened, cancelled]);
    } finally {
      const at = this.waiting.indexOf(entry!);
      if (at >= 0) this.waiting.splice(at, 1);
    }
  }
}

/** Waits (polling the in-memory state, nothing else) until `ready` holds. */
export async function until(ready: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The stand-in sync activities over the syncs the tests register (by id). */
export function standInSyncActivities(
  syncs: Map<string, StandInSync>,
  workflows: Pick<WorkflowClient, 'getHandle'>,
): SyncActivities {
  const byRun = new Map<string, StandInSync>();
  const runOf = (runId: string) => {
    const sync = byRun.get(runId);
    const run = sync?.runs.find((r) => r.runId === runId);
    if (!sync || !run) throw new Error(`unknown run ${runId}`);
    return { sync, run };
  };
  const begun = (run: StandInRun): BegunSyncRun => ({
    runId: run.runId,
    caller: CALLER,
    provider: 'stand-in',
    timeoutMs: 60_000,
    // Short, so a cancellation reaches the script's heartbeat soon.
    heartbeatTimeoutMs: 2_000,
  });
  return {
    async beginSyncRun(input): Promise<BegunSyncRun | SyncBusy | null> {
      const sync = syncs.get(input.syncId);
      if (!sync) return null;
      const again = sync.runs.find((r) => r.runId === input.runId);
      if (again) return begun(again);
      if (!input.webhook && sync.holder) {
        sync.log.push('busy');
        return { busy: sync.holder };
      }
      const run: StandInRun = {
        runId: input.runId,
        workflowId: input.workflowId,
        webhook: input.webhook === true,
        tookReset: !input.webhook && sync.resetPending,
      };
      if (run.tookReset) sync.resetPending = false;
      if (!run.webhook) sync.holder = { runId: run.runId, workflowId: run.workflowId };
      sync.runs.push(run);
      byRun.set(run.runId, sync);
      sync.log.push(
        `begin ${sync.runs.length}${run.tookReset ? ' reset' : ''}${run.webhook ? ' webhook' : ''}`,
      );
      return begun(run);
    },

    async cancelSyncRunHolder(holder): Promise<void> {
      const { sync, run } = runOf(holder.runId);
      if (run.outcome || !sync.resetPending) return;
      sync.log.push(`cancel ${sync.numberOf(run.runId)}`);
      try {
        await workflows.getHandle(holder.workflowId).cancel();
      } catch (error) {
        if (!(error instanceof WorkflowNotFoundError)) throw error;
      }
    },

    async syncResetPending({ syncId }): Promise<boolean> {
      return syncs.get(syncId)?.resetPending ?? false;
    },

    async runSyncScript(input): Promise<SyncRunOutcome> {
      const { sync, run } = runOf(input.runId);
      const context = Context.current();
      const attempt = context.info.attempt;
      sync.log.push(`script ${sync.numberOf(run.runId)}#${attempt}`);
      if (sync.failingAttempts.has(attempt)) throw new Error('the worker running the script went away');
      const leave = sync.enterScript(run.webhook);
      const heartbeat = setInterval(() => context.heartbeat(), 100);
      try {
        await sync.gate(context.cancelled);
      } finally {
        clearInterval(heartbeat);
        leave();
      }
      return { status: 'succeeded' };
    },

    async finishSyncRun({ runId, outcome }): Promise<void> {
      const { sync, run } = runOf(runId);
      if (run.outcome) return; // closed already: a retry of this activity
      run.outcome = outcome;
      if (sync.holder?.runId === runId) sync.holder = undefined;
      sync.log.push(`finish ${sync.numberOf(runId)} ${outcome.status}`);
    },
  };
}

/** One async action as the stand-in keeps it: the attempts' answers, in order, and what it was told. */
export class StandInInvocation {
  readonly id = randomUUID();
  readonly attempts: { attempt: number; final: boolean }[] = [];
  readonly published: string[] = [];
  constructor(
    /** Each attempt's answer; past the end, the last one again. */
    readonly answers: ('succeeded' | 'failed' | 'failed-retryable')[],
  ) {}

  input(maxRetries: number): InvocationWorkflowInput {
    return {
      invocationId: this.id,
      caller: CALLER,
      provider: 'stand-in',
      connectionId: 'conn-1',
      providerConfigKey: 'stand-in',
      input: { id: 1 },
      maxRetries,
      wallTimeMs: 10_000,
      notify: true,
    };
  }
}

export function standInActionActivities(invocations: Map<string, StandInInvocation>): ActionActivities {
  const find = (id: string) => {
    const invocation = invocations.get(id);
    if (!invocation) throw new Error(`unknown invocation ${id}`);
    return invocation;
  };
  return {
    async runInvocationAttempt(input) {
      const invocation = find(input.invocationId);
      invocation.attempts.push({ attempt: input.attempt, final: input.final });
      const answer =
        invocation.answers[Math.min(input.attempt, invocation.answers.length) - 1] ?? 'succeeded';
      if (answer === 'succeeded') return { status: 'succeeded', retryable: false };
      return { status: 'failed', retryable: answer === 'failed-retryable' };
    },
    async publishAsyncActionEvent(input) {
      find(input.invocationId).published.push(`async-action-${input.invocationId}`);
    },
  };
}
