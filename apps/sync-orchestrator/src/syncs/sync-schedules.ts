import { Logger } from '@nestjs/common';
import {
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  type Client,
  type ScheduleDescription,
} from '@temporalio/client';
import type { SyncWorkflowInput } from '../activities/sync.activities';
import { syncTriggerSignal, syncTriggerWorkflowIdOf, syncWorkflow } from '../workflows/sync.workflow';
import { temporalUnavailable } from './temporal-call';

/** The Temporal schedule of one sync (connection, function, variant), named after the sync row's id. */
export const scheduleIdOf = (syncId: string) => `sync-${syncId}`;

/** What the status route needs from a schedule; null when the schedule is gone. */
export interface ScheduleState {
  paused: boolean;
  nextActionAt: Date | null;
}

/** How long a schedule's last state read may stand in for one Temporal could not give (`state`). */
export const KNOWN_STATE_MAX_AGE_MS = 5 * 60_000;
/** Schedules whose last state is kept (the oldest read is dropped first). */
const KNOWN_STATES = 10_000;

/**
 * The sync schedules on Temporal, and the runs the API asks for. One schedule per sync row, each starting
 * `syncWorkflow` every interval; its overlap policy is SKIP, so a run still going when the next one is due
 * makes that one skipped, never concurrent.
 *
 * A trigger (and a start that unpauses) does not go through the schedule: `schedule.trigger()` is carried
 * out by the Temporal server, which starts the workflow without the caller's trace context, so the run
 * would be a trace of its own. The orchestrator signals-with-start the sync's `sync-<id>-trigger` workflow
 * instead, with its own client, whose OpenTelemetry interceptor writes the request's trace into the start's
 * headers: the run is in the trace of `POST /sync/trigger`. What the schedule's policies gave is kept by the
 * workflow and `SyncRunner.begin`: a trigger waits for the run in progress (scheduled or triggered) and
 * triggers meanwhile make one run after it (BUFFER_ONE); a full resync cancels the run in progress first
 * (CANCEL_OTHER); a scheduled run due while a triggered one runs is skipped (SKIP). As with the schedule, a
 * paused sync runs when triggered and stays paused.
 */
export class SyncSchedules {
  private readonly logger = new Logger('SyncSchedules');
  /** Each schedule's last state read from Temporal in this process, and when (see `state`). */
  private readonly known = new Map<string, { state: ScheduleState | null; at: number }>();

  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    /** How long one operation may take before Temporal counts as unavailable (`TEMPORAL_CALL_DEADLINE_MS`). */
    private readonly deadlineMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Each operation's Temporal calls end by a deadline: a Temporal that accepts connections and never
   * answers makes the request fail (as `service_unavailable`) instead of hanging until the caller gives up.
   */
  private bounded<T>(work: () => Promise<T>): Promise<T> {
    return this.client.connection.withDeadline(Date.now() + this.deadlineMs, work);
  }

  /**
   * Creates the schedule, or (already there) sets its interval and leaves its pause state alone. A new
   * unpaused schedule runs at once, as Nango starts a new sync right away when it auto-starts.
   */
  async ensure(syncId: string, everyMs: number, startPaused: boolean): Promise<'created' | 'updated'> {
    this.known.delete(syncId);
    return this.bounded(async () => {
      const input: SyncWorkflowInput = { syncId };
      try {
        await this.client.schedule.create({
          scheduleId: scheduleIdOf(syncId),
          spec: { intervals: [{ every: everyMs }] },
          action: {
            type: 'startWorkflow',
            workflowType: 'syncWorkflow',
            workflowId: scheduleIdOf(syncId),
            taskQueue: this.taskQueue,
            args: [input],
          },
          policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 minute' },
          state: startPaused
            ? { paused: true, note: 'auto_start is false' }
            : { paused: false, triggerImmediately: true },
        });
        return 'created';
      } catch (error) {
        if (!(error instanceof ScheduleAlreadyRunning)) throw error;
        await this.setInterval(syncId, everyMs);
        return 'updated';
      }
    });
  }

  async setInterval(syncId: string, everyMs: number): Promise<void> {
    this.known.delete(syncId);
    return this.bounded(async () => {
      await this.client.schedule.getHandle(scheduleIdOf(syncId)).update((previous) => {
        const current = previous.spec.intervals?.[0]?.every;
        if (current === everyMs && (previous.spec.intervals?.length ?? 0) === 1) return previous;
        return { ...previous, spec: { intervals: [{ every: everyMs }] } };
      });
    });
  }

  /** A run now, or after the one in progress; `reset` (a full resync) cancels the one in progress. */
  async trigger(syncId: string, reset: boolean): Promise<void> {
    return this.bounded(async () => {
      const input: SyncWorkflowInput = { syncId, triggered: true };
      await this.client.workflow.signalWithStart(syncWorkflow, {
        workflowId: syncTriggerWorkflowIdOf(syncId),
        taskQueue: this.taskQueue,
        args: [input],
        signal: syncTriggerSignal,
        signalArgs: [{ reset }],
      });
    });
  }

  async pause(syncId: string): Promise<void> {
    this.known.delete(syncId);
    return this.bounded(async () => {
      await this.client.schedule.getHandle(scheduleIdOf(syncId)).pause('paused through the API');
    });
  }

  /** Unpauses; a schedule that was paused also runs now (Nango: "the sync will execute immediately"). */
  async start(syncId: string): Promise<void> {
    this.known.delete(syncId);
    return this.bounded(async () => {
      const handle = this.client.schedule.getHandle(scheduleIdOf(syncId));
      const description = await handle.describe();
      if (!description.state.paused) return;
      await handle.unpause('started through the API');
      await this.trigger(syncId, false);
    });
  }

  async delete(syncId: string): Promise<void> {
    this.known.delete(syncId);
    return this.bounded(async () => {
      try {
        await this.client.schedule.getHandle(scheduleIdOf(syncId)).delete();
      } catch (error) {
        if (!(error instanceof ScheduleNotFoundError)) throw error;
      }
    });
  }

  /**
   * The schedule's state. When Temporal cannot answer in time (a busy server: describing a schedule queries
   * its scheduler workflow), the state this process last read stands in for it, if it is at most
   * `KNOWN_STATE_MAX_AGE_MS` old and no change went through this process since: a status read then answers
   * instead of failing. Only without such a state does the error go on (`service_unavailable`).
   */
  async state(syncId: string): Promise<ScheduleState | null> {
    try {
      const state = await this.bounded(() => this.describe(syncId));
      this.known.delete(syncId);
      if (this.known.size >= KNOWN_STATES) this.known.delete(this.known.keys().next().value!);
      this.known.set(syncId, { state, at: this.now() });
      return state;
    } catch (error) {
      const known = this.known.get(syncId);
      if (!known || this.now() - known.at > KNOWN_STATE_MAX_AGE_MS || !temporalUnavailable(error))
        throw error;
      this.logger.warn(
        `Temporal could not describe schedule ${scheduleIdOf(syncId)} (${(error as Error).message}); ` +
          `answering its state as read ${Math.round((this.now() - known.at) / 1000)} s ago`,
      );
      return known.state;
    }
  }

  private async describe(syncId: string): Promise<ScheduleState | null> {
    let description: ScheduleDescription;
    try {
      description = await this.client.schedule.getHandle(scheduleIdOf(syncId)).describe();
    } catch (error) {
      if (error instanceof ScheduleNotFoundError) return null;
      throw error;
    }
    return {
      paused: description.state.paused,
      nextActionAt: description.state.paused ? null : (description.info.nextActionTimes[0] ?? null),
    };
  }
}
