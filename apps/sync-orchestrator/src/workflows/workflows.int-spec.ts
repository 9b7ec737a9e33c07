import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { temporalCliBinary } from '@switchboard/testing';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, Worker, type WorkflowBundle } from '@temporalio/worker';
import {
  StandInInvocation,
  StandInSync,
  standInActionActivities,
  standInSyncActivities,
  until,
} from '../../test/workflows/stand-in-activities';
import { SyncSchedules } from '../syncs/sync-schedules';
import { workerTracing } from '../temporal/tracing';
import { currentWorkflowBundle } from '../../test/workflows/current-bundle';
import { invocationWorkflow, syncWorkflow } from './index';
import { syncTriggerWorkflowIdOf } from './sync.workflow';

/**
 * The workflows' protocol on a real Temporal server (the CLI's dev server, started by
 * `TestWorkflowEnvironment.createLocal`), the build's bundle in a real worker, activities standing in for
 * the runtime's (test/workflows/stand-in-activities.ts). Triggers go through `SyncSchedules.trigger`, the
 * orchestrator's own signal-with-start. No time skipping: its Java test server cannot be had here, so
 * nothing waits on a workflow timer longer than a second.
 *
 * `RECORD_WORKFLOW_HISTORIES=1` writes the histories of these runs to test/fixtures/workflow-histories/,
 * which replay.spec.ts replays against the current code (see the README, "Workflow tests").
 */

jest.setTimeout(30_000);

const HISTORIES = join(__dirname, '../../test/fixtures/workflow-histories');
const recording = process.env.RECORD_WORKFLOW_HISTORIES === '1';

/** Keeps a run's history as a replay fixture, when recording. */
async function record(name: string, handle: WorkflowHandle, runId?: string): Promise<void> {
  if (!recording) return;
  const client = handle.client;
  const history = await client.getHandle(handle.workflowId, runId).fetchHistory();
  mkdirSync(HISTORIES, { recursive: true });
  writeFileSync(
    join(HISTORIES, `${name}.json`),
    `${JSON.stringify(JSON.parse(historyToJSON(history)), null, 2)}\n`,
  );
}

/** A server, a worker polling its own task queue with the stand-in activities, and the syncs they know. */
async function startWorkflowWorld(bundle: WorkflowBundle, extraArgs: string[] = []) {
  const env = await TestWorkflowEnvironment.createLocal({
    server: { executable: { type: 'existing-path', path: temporalCliBinary() }, extraArgs },
  });
  const syncs = new Map<string, StandInSync>();
  const invocations = new Map<string, StandInInvocation>();
  const taskQueue = 'workflow-tests';
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: bundle,
    activities: {
      ...standInSyncActivities(syncs, env.client.workflow),
      ...standInActionActivities(invocations),
    },
    ...workerTracing(),
  });
  const running = worker.run();
  const schedules = new SyncSchedules(env.client, taskQueue, 8_000);
  return {
    env,
    taskQueue,
    schedules,
    newSync(): StandInSync {
      const sync = new StandInSync();
      syncs.set(sync.id, sync);
      return sync;
    },
    newInvocation(answers: StandInInvocation['answers']): StandInInvocation {
      const invocation = new StandInInvocation(answers);
      invocations.set(invocation.id, invocation);
      return invocation;
    },
    /** What a schedule starts (the server names the workflow `sync-<id>-<time>`). */
    startScheduled(sync: StandInSync, webhook?: { payload: unknown }) {
      return env.client.workflow.start(syncWorkflow, {
        taskQueue,
        workflowId: `sync-${sync.id}-${webhook ? 'webhook' : new Date().toISOString()}`,
        args: [{ syncId: sync.id, ...(webhook ? { webhook } : {}) }],
      });
    },
    triggered(sync: StandInSync) {
      return env.client.workflow.getHandle<typeof syncWorkflow>(syncTriggerWorkflowIdOf(sync.id));
    },
    /** A full resync as the service asks for it: `reset_pending` first, then the trigger. */
    async fullResync(sync: StandInSync) {
      sync.resetPending = true;
      await schedules.trigger(sync.id, true);
    },
    async stop() {
      worker.shutdown();
      await running;
      await env.teardown();
    },
  };
}

type World = Awaited<ReturnType<typeof startWorkflowWorld>>;

/** What the latest execution of a workflow was started with (a continued one: what its predecessor carried). */
const inputOf = async (handle: WorkflowHandle): Promise<unknown> => {
  const { events } = await handle.fetchHistory();
  const payload = events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
  return payload ? defaultPayloadConverter.fromPayload(payload) : undefined;
};

const expectCancelled = async (handle: WorkflowHandle) => {
  await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
  expect((await handle.describe()).status.name).toBe('CANCELLED');
};

let bundle: WorkflowBundle;

beforeAll(async () => {
  // Not WARN: the worker would log each failure of a stand-in attempt that the test provokes.
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  bundle = await currentWorkflowBundle();
});

describe('syncWorkflow and invocationWorkflow on a Temporal dev server', () => {
  let world: World;

  beforeAll(async () => {
    world = await startWorkflowWorld(bundle);
  });

  afterAll(async () => {
    await world?.stop();
  });

  it('a scheduled run begins, runs the script once, and closes its run', async () => {
    const sync = world.newSync();
    const handle = await world.startScheduled(sync);
    expect(await handle.result()).toBe('succeeded');
    expect(sync.log).toEqual(['begin 1', 'script 1#1', 'finish 1 succeeded']);
    await record('scheduled-run', handle);
  });

  it('the run fence: a script attempt lost with its worker is retried as the next attempt of the same run', async () => {
    const sync = world.newSync();
    sync.failingAttempts.add(1);
    const handle = await world.startScheduled(sync);
    expect(await handle.result()).toBe('succeeded');
    // One run, one run id for every attempt: what the first attempt saved counts as seen by the second,
    // and the fence admits only writes of the latest attempt.
    expect(sync.log).toEqual(['begin 1', 'script 1#1', 'script 1#2', 'finish 1 succeeded']);
    expect(sync.runs).toHaveLength(1);
    await record('scheduled-run-retried-attempt', handle);
  });

  it('a scheduled run due while another run holds the sync is skipped, never run beside it', async () => {
    const sync = world.newSync();
    sync.holdScripts = true;
    const first = await world.startScheduled(sync);
    await until(() => sync.scriptsWaiting === 1, 'the first run is under way');
    const second = await world.startScheduled(sync);
    expect(await second.result()).toBe('skipped');
    sync.releaseAll();
    expect(await first.result()).toBe('succeeded');
    expect(sync.log).toEqual(['begin 1', 'script 1#1', 'busy', 'finish 1 succeeded']);
  });

  it('a webhook run holds nothing: it runs beside the run holding the sync', async () => {
    const sync = world.newSync();
    sync.holdScripts = true;
    const scheduled = await world.startScheduled(sync);
    await until(() => sync.scriptsWaiting === 1, 'the scheduled run is under way');
    const webhook = await world.startScheduled(sync, { payload: { type: 'contact.updated' } });
    await until(() => sync.scriptsWaiting === 2, 'the webhook run is under way beside it');
    sync.releaseAll();
    expect(await webhook.result()).toBe('succeeded');
    expect(await scheduled.result()).toBe('succeeded');
    expect(sync.runs.map((r) => r.webhook)).toEqual([false, true]);
  });

  it('triggers while a triggered run runs make exactly one more run after it, never beside it', async () => {
    const sync = world.newSync();
    sync.holdScripts = true;
    await world.schedules.trigger(sync.id, false);
    await until(() => sync.scriptsWaiting === 1, 'the first run is under way');
    await world.schedules.trigger(sync.id, false);
    await world.schedules.trigger(sync.id, false);
    sync.releaseScript();
    await until(() => sync.scriptsWaiting === 1 && sync.runs.length === 2, 'the second run is under way');
    sync.releaseScript();
    const handle = world.triggered(sync);
    expect(await handle.result()).toBe('succeeded');
    expect(sync.log).toEqual([
      'begin 1',
      'script 1#1',
      'finish 1 succeeded',
      'begin 2',
      'script 2#1',
      'finish 2 succeeded',
    ]);
    expect(sync.mostAtOnce).toBe(1);
    await record('triggered-buffer-one', handle);
  });

  it('a trigger while a scheduled run holds the sync waits, and runs as soon as that run ends', async () => {
    const sync = world.newSync();
    sync.holdScripts = true;
    const scheduled = await world.startScheduled(sync);
    await until(() => sync.scriptsWaiting === 1, 'the scheduled run is under way');
    await world.schedules.trigger(sync.id, false);
    await until(() => sync.log.includes('busy'), 'the trigger found the sync held');
    sync.holdScripts = false;
    const released = Date.now();
    sync.releaseScript();
    expect(await scheduled.result()).toBe('succeeded');
    expect(await world.triggered(sync).result()).toBe('succeeded');
    // Woken by the scheduled run's syncRunEnded, not by its next look 10 s later.
    expect(Date.now() - released).toBeLessThan(8_000);
    expect(sync.log).toEqual([
      'begin 1',
      'script 1#1',
      'busy',
      'finish 1 succeeded',
      'begin 2',
      'script 2#1',
      'finish 2 succeeded',
    ]);
    await record('triggered-waits-for-scheduled', world.triggered(sync));
  });

  it('a full resync cancels the scheduled run in progress, which closes as cancelled, then runs and takes the reset', async () => {
    const sync = world.newSync();
    sync.holdScripts = true;
    const scheduled = await world.startScheduled(sync);
    await until(() => sync.scriptsWaiting === 1, 'the scheduled run is under way');
    sync.holdScripts = false;
    await world.fullResync(sync);
    await expectCancelled(scheduled);
    expect(await world.triggered(sync).result()).toBe('succeeded');
    expect(sync.log).toEqual([
      'begin 1',
      'script 1#1',
      'busy',
      'cancel 1',
      'finish 1 cancelled',
      'begin 2 reset',
      'script 2#1',
      'finish 2 succeeded',
    ]);
    // The cancelled run is closed before the resync begins, while its script may still be stopping: from
    // then on the run fence refuses that script's writes (sync-run-fence.ts, e2e "a full resync stops...").
    await record('full-resync-cancelled-scheduled-run', scheduled);
    await record('full-resync-trigger', world.triggered(sync));
  });

  it('a full resync during a triggered run cancels that run and runs again, taking the reset', async () => {
    const sync = world.newSync();
    sync.holdScripts = true;
    await world.schedules.trigger(sync.id, false);
    await until(() => sync.scriptsWaiting === 1, 'the first run is under way');
    sync.holdScripts = false;
    await world.fullResync(sync);
    const handle = world.triggered(sync);
    expect(await handle.result()).toBe('succeeded');
    expect(sync.log).toEqual([
      'begin 1',
      'script 1#1',
      'finish 1 cancelled',
      'begin 2 reset',
      'script 2#1',
      'finish 2 succeeded',
    ]);
    await record('triggered-full-resync-during-run', handle);
  });

  it('a cancelled sync workflow closes its run as cancelled and leaves the sync free', async () => {
    const sync = world.newSync();
    sync.holdScripts = true;
    await world.schedules.trigger(sync.id, false);
    await until(() => sync.scriptsWaiting === 1, 'the run is under way');
    await world.triggered(sync).cancel();
    await expectCancelled(world.triggered(sync));
    expect(sync.log).toEqual(['begin 1', 'script 1#1', 'finish 1 cancelled']);
    expect(sync.holder).toBeUndefined();
    // The next trigger starts a new execution of the same workflow id, which runs at once.
    sync.holdScripts = false;
    await world.schedules.trigger(sync.id, false);
    expect(await world.triggered(sync).result()).toBe('succeeded');
    expect(sync.log.slice(3)).toEqual(['begin 2', 'script 2#1', 'finish 2 succeeded']);
  });

  it('an async action whose attempt fails retryably is tried again after a pause, then announced once', async () => {
    const invocation = world.newInvocation(['failed-retryable', 'succeeded']);
    const handle = await world.env.client.workflow.start(invocationWorkflow, {
      taskQueue: world.taskQueue,
      workflowId: invocation.id,
      args: [invocation.input(2)],
    });
    expect(await handle.result()).toBe('succeeded');
    expect(invocation.attempts).toEqual([
      { attempt: 1, final: false },
      { attempt: 2, final: false },
    ]);
    expect(invocation.published).toEqual([`async-action-${invocation.id}`]);
    await record('async-action-retried', handle);
  });

  it('an async action that fails for good is not tried again, and is announced once', async () => {
    const invocation = world.newInvocation(['failed']);
    const handle = await world.env.client.workflow.start(invocationWorkflow, {
      taskQueue: world.taskQueue,
      workflowId: invocation.id,
      args: [invocation.input(3)],
    });
    expect(await handle.result()).toBe('failed');
    expect(invocation.attempts).toEqual([{ attempt: 1, final: false }]);
    expect(invocation.published).toHaveLength(1);
  });
});

describe('syncWorkflow on a server that suggests continue-as-new early', () => {
  let world: World;

  beforeAll(async () => {
    // A history of a few dozen events counts as long here (the default is 4096 events).
    world = await startWorkflowWorld(bundle, [
      '--dynamic-config-value',
      'limit.historyCount.suggestContinueAsNew=20',
    ]);
  });

  afterAll(async () => {
    await world?.stop();
  });

  it('a triggered workflow continues as new between runs, carrying the trigger it has not served', async () => {
    const sync = world.newSync();
    sync.holdScripts = true;
    await world.schedules.trigger(sync.id, false);
    await until(() => sync.scriptsWaiting === 1, 'the first run is under way');
    const first = await world.triggered(sync).describe();
    await world.schedules.trigger(sync.id, false);
    sync.releaseAll();
    const handle = world.triggered(sync);
    expect(await handle.result()).toBe('succeeded');
    expect(
      (await world.env.client.workflow.getHandle(handle.workflowId, first.runId).describe()).status.name,
    ).toBe('CONTINUED_AS_NEW');
    const latest = await handle.describe();
    expect(latest.runId).not.toBe(first.runId);
    expect(await inputOf(handle)).toEqual({
      syncId: sync.id,
      triggered: true,
      pendingTriggers: 1,
      pendingReset: false,
    });
    // Each trigger ran once: one run before the continuation, one after it.
    expect(sync.log).toEqual([
      'begin 1',
      'script 1#1',
      'finish 1 succeeded',
      'begin 2',
      'script 2#1',
      'finish 2 succeeded',
    ]);
    await record('triggered-continue-as-new', handle, first.runId);
    await record('triggered-continued', handle, latest.runId);
  });

  it('a full resync that came before a continue-as-new is run by the continued workflow', async () => {
    const sync = world.newSync();
    sync.holdScripts = true;
    await world.schedules.trigger(sync.id, false);
    await until(() => sync.scriptsWaiting === 1, 'the first run is under way');
    const first = await world.triggered(sync).describe();
    sync.holdScripts = false;
    await world.fullResync(sync);
    const handle = world.triggered(sync);
    expect(await handle.result()).toBe('succeeded');
    expect((await handle.describe()).runId).not.toBe(first.runId);
    // The continued workflow knows a full resync is pending: it would cancel a run holding the sync first.
    expect(await inputOf(handle)).toEqual({
      syncId: sync.id,
      triggered: true,
      pendingTriggers: 1,
      pendingReset: true,
    });
    expect(sync.log).toEqual([
      'begin 1',
      'script 1#1',
      'finish 1 cancelled',
      'begin 2 reset',
      'script 2#1',
      'finish 2 succeeded',
    ]);
  });
});
