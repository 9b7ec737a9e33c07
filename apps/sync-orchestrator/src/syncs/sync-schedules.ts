import {
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  type Client,
  type ScheduleDescription,
} from '@temporalio/client';
import type { SyncWorkflowInput } from '../activities/sync.activities';

/** The Temporal schedule of one sync (connection, function, variant), named after the sync row's id. */
export const scheduleIdOf = (syncId: string) => `sync-${syncId}`;

/** What the status route needs from a schedule; null when the schedule is gone. */
export interface ScheduleState {
  paused: boolean;
  nextActionAt: Date | null;
}

/**
 * The sync schedules on Temporal. One schedule per sync row, each starting `syncWorkflow` every interval;
 * its overlap policy is SKIP, so a run still going when the next one is due makes that one skipped, never
 * concurrent. A trigger buffers one run behind a running one (BUFFER_ONE); a full resync cancels the
 * running one first (CANCEL_OTHER: the next run starts once the cancelled one has closed).
 */
export class SyncSchedules {
  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
  ) {}

  /**
   * Creates the schedule, or (already there) sets its interval and leaves its pause state alone. A new
   * unpaused schedule runs at once, as Nango starts a new sync right away when it auto-starts.
   */
  async ensure(syncId: string, everyMs: number, startPaused: boolean): Promise<'created' | 'updated'> {
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
  }

  async setInterval(syncId: string, everyMs: number): Promise<void> {
    await this.client.schedule.getHandle(scheduleIdOf(syncId)).update((previous) => {
      const current = previous.spec.intervals?.[0]?.every;
      if (current === everyMs && (previous.spec.intervals?.length ?? 0) === 1) return previous;
      return { ...previous, spec: { intervals: [{ every: everyMs }] } };
    });
  }

  async trigger(syncId: string, cancelRunning: boolean): Promise<void> {
    await this.client.schedule
      .getHandle(scheduleIdOf(syncId))
      .trigger(cancelRunning ? ScheduleOverlapPolicy.CANCEL_OTHER : ScheduleOverlapPolicy.BUFFER_ONE);
  }

  async pause(syncId: string): Promise<void> {
    await this.client.schedule.getHandle(scheduleIdOf(syncId)).pause('paused through the API');
  }

  /** Unpauses; a schedule that was paused also runs now (Nango: "the sync will execute immediately"). */
  async start(syncId: string): Promise<void> {
    const handle = this.client.schedule.getHandle(scheduleIdOf(syncId));
    const description = await handle.describe();
    if (!description.state.paused) return;
    await handle.unpause('started through the API');
    await handle.trigger(ScheduleOverlapPolicy.BUFFER_ONE);
  }

  async delete(syncId: string): Promise<void> {
    try {
      await this.client.schedule.getHandle(scheduleIdOf(syncId)).delete();
    } catch (error) {
      if (!(error instanceof ScheduleNotFoundError)) throw error;
    }
  }

  async state(syncId: string): Promise<ScheduleState | null> {
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
