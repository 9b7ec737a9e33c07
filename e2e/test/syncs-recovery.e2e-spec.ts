import { randomUUID } from 'node:crypto';
import { createServer, type Socket } from 'node:net';
import type { Nango } from '@nangohq/node';
import { EVENT_CONSUMERS, EVENT_STREAM, type SyncStatusItem } from '@switchboard/contracts';
import { startStack, type Stack } from '@switchboard/testing';
import { ScheduleNotFoundError, type Client } from '@temporalio/client';
import { connect } from 'nats';
import { finishedRuns, runFailedSince, runningSyncRun } from './support/barriers';
import { call } from './support/http';
import { START_HOOK_TIMEOUT_MS, STACK_READY_TIMEOUT_MS } from './support/processes';
import { writeProxyProvidersFile } from './support/proxy-fakes';
import { loopbackEgress, type ContactsProvider } from './support/syncs-fakes';
import { API_KEY, CONN_A, CONN_B, KEY, sleep, SYNC, SyncsSuite } from './support/syncs-suite';

jest.setTimeout(240_000);

/** Repeats a request until it answers 200 (an orchestrator just started may not be subscribed yet). */
const waitForOk = async (request: () => Promise<{ status: number; body: unknown }>) => {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const res = await request();
    if (res.status === 200 || Date.now() > deadline) return res;
    await sleep(250);
  }
};

// Runs cut short (overlapping, cancelled, terminated, their worker killed) and connections changed while the
// orchestrator is down: on a stack of this file's own, whose processes the tests stop, kill and replace.
describe('syncs on Temporal: runs that overlap, are cancelled or lose their worker, and services that go down', () => {
  // Enough contacts for a run of several pages to be cut short on any of them; fewer than the other file's,
  // as every test here runs the whole sync again more than once.
  const suite = new SyncsSuite(1500);
  let stack: Stack;
  let provider: ContactsProvider;
  let nango: Nango;
  let temporal: Client;
  const { status, statusOf, waitForRun, allRecords, schedule, expectProviderData, importWithSchedule } =
    suite;
  const { expectNothingAfterRelease, startSlowRun } = suite;

  const api = (method: string, path: string, body?: unknown) =>
    call(stack.gatewayUrl, method, path, { key: stack.secretKey, ...(body !== undefined ? { body } : {}) });

  beforeAll(async () => {
    await suite.start(() =>
      startStack({
        env: { SWITCHBOARD_PROVIDERS_FILE: writeProxyProvidersFile() },
        // A killed worker's run is retried after this much silence (the kill tests).
        serviceEnv: loopbackEgress({
          'sync-orchestrator': { SWITCHBOARD_SYNC_HEARTBEAT_TIMEOUT_MS: '5000' },
        }),
        // Seven services, the CLI's build and a first sync run share two cores with other suites.
        readyTimeoutMs: 2 * STACK_READY_TIMEOUT_MS,
      }),
    );
    ({ stack, provider, nango, temporal } = suite);
    await suite.deploy();
  }, 2 * START_HOOK_TIMEOUT_MS);

  afterAll(() => suite.stop());

  // The workflow protocol behind these two tests (BUFFER_ONE, SKIP, a full resync cancelling the holder,
  // continue-as-new, cancellation) is tested on its own in apps/sync-orchestrator/src/workflows/
  // workflows.int-spec.ts; here a held provider page keeps a run in progress, so no run is slowed down.
  it('runs of one sync never overlap: a scheduled start during a triggered run is skipped, triggers meanwhile make one more run, a terminated run holds nothing', async () => {
    const [item] = await status(CONN_B);
    const triggered = temporal.workflow.getHandle(`sync-${item!.id}-trigger`);
    const total = provider.contacts.length;
    const oneRun = Array.from({ length: Math.ceil(total / provider.pageSize) }, (_, i) =>
      String(i * provider.pageSize),
    );
    // The run in progress waits for its third page until the test lets it go.
    let held = provider.hold(oneRun[2]!);
    try {
      const from = provider.pages.length;
      await nango.triggerSync(KEY, [SYNC], CONN_B);
      await held.requested;

      // The schedule comes due meanwhile (fired here by hand): its run is skipped, not run beside this one.
      const firedAt = Date.now();
      const scheduleHandle = temporal.schedule.getHandle(`sync-${item!.id}`);
      await scheduleHandle.trigger();
      let scheduledId: string | undefined;
      const fired = Date.now() + 10_000;
      while (!scheduledId && Date.now() < fired) {
        scheduledId = (await scheduleHandle.describe()).info.recentActions.find(
          (a) => a.takenAt.getTime() >= firedAt - 250,
        )?.action.workflow.workflowId;
        if (!scheduledId) await sleep(100);
      }
      expect(await temporal.workflow.getHandle(scheduledId!).result()).toBe('skipped');

      // Two more triggers while it runs: one more run after it (Temporal's BUFFER_ONE), never beside it.
      await nango.triggerSync(KEY, [SYNC], CONN_B);
      await nango.triggerSync(KEY, [SYNC], CONN_B);
      held.release();
      expect(await triggered.result()).toBe('succeeded');
      expect(provider.pages.slice(from).map((p) => p.cursor)).toEqual([...oneRun, ...oneRun]);
      const ran = (await status(CONN_B))[0]!;
      expect(ran).toMatchObject({
        status: 'SUCCESS',
        latestResult: { Contact: { added: 0, updated: 0, deleted: 0 } },
        recordCount: { Contact: total },
      });

      // A run whose workflow is terminated (not cancelled: it cannot close its run) holds nothing.
      held = provider.hold(oneRun[2]!);
      await nango.triggerSync(KEY, [SYNC], CONN_B);
      await held.requested;
      const runsBefore = finishedRuns(stack).length;
      await triggered.terminate('the e2e test terminates it');
      const stopped = (await status(CONN_B))[0]!;
      // Its run could not close itself, yet it is not shown as still running; it left the checkpoint of
      // the pages it saved, short of the end.
      expect(stopped).toMatchObject({ status: 'ERROR', latestExecutionStatus: 'STOPPED' });
      const left = stopped.checkpoint as { cursor: string } | null;
      expect(left).toEqual({ cursor: expect.any(String) });
      const next = provider.pages.length;
      await nango.triggerSync(KEY, [SYNC], CONN_B);
      const done = await waitForRun(CONN_B, ran.finishedAt);
      // The next run closes the terminated one and resumes from its checkpoint; having seen only the
      // pages after it, it deletes nothing it did not see.
      expect(done).toMatchObject({
        status: 'SUCCESS',
        latestResult: { Contact: { added: 0, updated: 0, deleted: 0 } },
        recordCount: { Contact: total },
        checkpoint: null,
      });
      expect(provider.pages.slice(next).map((p) => p.cursor)).toEqual(
        oneRun.slice(oneRun.indexOf(left!.cursor)),
      );
      // The terminated run's script was stopped (its activity heard of the termination, or its lease ran
      // out; a late write of it would be refused): given its page now, it asks for no more until it ends.
      const released = provider.pages.length;
      held.release();
      await runFailedSince(stack, runsBefore);
      expect(provider.pages.slice(released)).toEqual([]);
    } finally {
      held.release();
    }
  });

  it('a full resync cancels a scheduled run in progress first, then runs', async () => {
    // The schedule also fires by itself at the top of each hour (`every hour`): a run of its own in
    // progress would make the one fired here skipped. Near the hour, the test waits until it is past and
    // its run done.
    const toNextTick = 3_600_000 - (Date.now() % 3_600_000);
    if (toNextTick < 60_000) await sleep(toNextTick + 1_000);
    const idleBy = Date.now() + 60_000;
    while ((await status(CONN_B))[0]!.status === 'RUNNING' && Date.now() < idleBy) await sleep(250);
    const [item] = await status(CONN_B);
    expect(item!.status).not.toBe('RUNNING');
    const held = provider.hold(String(2 * provider.pageSize));
    try {
      // A scheduled run in progress (the schedule fired here by hand), waiting for its third page.
      const firedAt = Date.now();
      const scheduleHandle = temporal.schedule.getHandle(`sync-${item!.id}`);
      await scheduleHandle.trigger();
      await held.requested;
      const scheduledId = (await scheduleHandle.describe()).info.recentActions.find(
        (a) => a.takenAt.getTime() >= firedAt - 250,
      )?.action.workflow.workflowId;
      expect((await status(CONN_B))[0]!.status).toBe('RUNNING');

      await nango.triggerSync(KEY, [SYNC], CONN_B, { reset: true });
      const scheduled = temporal.workflow.getHandle(scheduledId!);
      await scheduled.result().catch(() => undefined);
      expect((await scheduled.describe()).status.name).toBe('CANCELLED');
      // The full resync ran once the cancelled run was closed.
      expect(await temporal.workflow.getHandle(`sync-${item!.id}-trigger`).result()).toBe('succeeded');
      expect((await status(CONN_B))[0]).toMatchObject({
        status: 'SUCCESS',
        latestExecutionStatus: 'SUCCESS',
        recordCount: { Contact: provider.contacts.length },
        checkpoint: null,
      });
    } finally {
      held.release();
    }
  });

  it('a connection deleted while the orchestrator is down loses its schedule once the orchestrator is back', async () => {
    const item = await importWithSchedule('conn-d');

    await stack.stopService('sync-orchestrator');
    // The vault cannot ask the orchestrator first; the deletion goes ahead anyway (fail-open).
    await nango.deleteConnection(KEY, 'conn-d');
    expect((await schedule(item.id)).state.paused).toBe(false);
    await stack.startReplica('sync-orchestrator');
    const gone = Date.now() + 60_000;
    for (;;) {
      const found = await schedule(item.id).then(
        () => true,
        (error: unknown) => {
          if (error instanceof ScheduleNotFoundError) return false;
          throw error;
        },
      );
      if (!found) break;
      if (Date.now() > gone) throw new Error('the deleted connection kept its schedule');
      await sleep(250);
    }
    // The schedule goes first, then the sync's row: the status may list the connection for a moment.
    const listed = async () => (await statusOf('*')).map((s) => s.connection_id).sort();
    while ((await listed()).includes('conn-d') && Date.now() < gone) await sleep(250);
    expect(await listed()).toEqual([CONN_A, CONN_B]);
  });

  it('a worker killed mid-run: its script stops when its lease runs out, another worker resumes from the checkpoint, no record lost or repeated', async () => {
    // Checkpointed a few pages in.
    const { before, pagesOf: pagesOfA } = await startSlowRun(CONN_A, 200, 500, 12);
    const runsBefore = finishedRuns(stack).length;
    const runId = await runningSyncRun(stack.databaseUrl, CONN_A);
    const [worker] = stack.workers;
    worker!.process.kill('SIGKILL');
    await new Promise((resolve) => worker!.process.once('exit', resolve));
    // No worker for a while: the orphaned script's lease (the heartbeat timeout, 5 s) runs out and
    // functions-runtime stops it. A script still running asks for its next page as soon as one is answered
    // (each after 400 ms): none comes after the stop.
    await runFailedSince(stack, runsBefore, { runId });
    const stoppedAt = Date.now();
    await sleep(3 * provider.pageDelayMs);
    expect(pagesOfA().filter((p) => p.at > stoppedAt)).toEqual([]);
    // The rest of the run need not be slow.
    provider.pageDelayMs = 0;
    stack.startWorker();

    const done = await waitForRun(CONN_A, before.finishedAt, SYNC, 150_000);
    expect(done.status).toBe('SUCCESS');
    const total = provider.contacts.length;
    expect(done.recordCount).toEqual({ Contact: total });
    expect(done.latestResult).toEqual({ Contact: { added: 0, updated: 200, deleted: 0 } });
    // The retry resumed from a checkpoint: no page after the kill started over from the first one.
    const after = pagesOfA().filter((p) => p.at > stoppedAt);
    expect(after.length).toBeGreaterThan(0);
    expect(after.some((p) => p.cursor === '0')).toBe(false);
    const { records } = await allRecords(CONN_A);
    const live = records.filter((r) => r._nango_metadata.deleted_at === null);
    expect(live).toHaveLength(total);
    expect(new Set(live.map((r) => r.id))).toEqual(new Set(provider.contacts.map((c) => c.id)));
    expect(live.filter((r) => r.revision === 2)).toHaveLength(200);
  });

  it("a worker SIGKILLed mid-run while another one polls: the run finishes on the other, the records are the provider's, none saved twice", async () => {
    const alive = () =>
      stack.workers.filter((w) => w.process.exitCode === null && w.process.signalCode === null);
    // One worker takes the run; the second starts once the run is under way, so the run is the first's.
    expect(alive()).toHaveLength(1);
    const [doomed] = alive();
    const { before, pagesOf: pagesOfA } = await startSlowRun(CONN_A, 150, 600, 8);
    const runsBefore = finishedRuns(stack).length;
    const runId = await runningSyncRun(stack.databaseUrl, CONN_A);
    const survivor = stack.startWorker();
    doomed!.process.kill('SIGKILL');
    await new Promise((resolve) => doomed!.process.once('exit', resolve));
    // Once the doomed worker's script has been stopped (its lease ran out), the rest of the run, on the
    // survivor, need not be slow.
    await runFailedSince(stack, runsBefore, { runId });
    provider.pageDelayMs = 0;

    const done = await waitForRun(CONN_A, before.finishedAt, SYNC, 150_000);
    expect(done.status).toBe('SUCCESS');
    expect(survivor.process.exitCode).toBeNull();
    const total = provider.contacts.length;
    // Each changed contact counted once: a page saved again by the retry would not be "updated" twice,
    // and one lost would leave its contacts at their old revision.
    expect(done.latestResult).toEqual({ Contact: { added: 0, updated: 150, deleted: 0 } });
    expect(done.recordCount).toEqual({ Contact: total });
    // The retry went on from a checkpoint, not from the first page.
    const cursors = pagesOfA().map((p) => p.cursor);
    expect(cursors.filter((c) => c === '0').length).toBeLessThanOrEqual(1);
    const { records } = await allRecords(CONN_A);
    const live = records.filter((r) => r._nango_metadata.deleted_at === null);
    expect(live).toHaveLength(total);
    expect(new Set(live.map((r) => r.id)).size).toBe(total);
    await expectProviderData();
  });

  it("a full resync stops the run it cancels: nothing that run fetched after is written, the records and checkpoint are the resync's", async () => {
    const [item] = await status(CONN_A);
    const triggered = temporal.workflow.getHandle(`sync-${item!.id}-trigger`);
    provider.pageSize = 100;
    provider.pageDelayMs = 0;
    // The run asks for page 500 (its checkpoint says 500) and waits for it.
    const held = provider.hold('500');
    try {
      await nango.triggerSync(KEY, [SYNC], CONN_A);
      await held.requested;
      const runsBefore = finishedRuns(stack).length;
      // The provider changes meanwhile; the held page still answers those contacts as they were.
      provider.change(100, 500);
      await nango.triggerSync(KEY, [SYNC], CONN_A, { reset: true });
      expect(await triggered.result()).toBe('succeeded');
      const done = (await status(CONN_A))[0]!;
      expect(done).toMatchObject({
        status: 'SUCCESS',
        latestResult: { Contact: { added: 0, updated: 100, deleted: 0 } },
        recordCount: { Contact: provider.contacts.length },
        checkpoint: null,
      });

      // The cancelled run's page comes now: its script was stopped, it saves nothing and asks for no more.
      await expectNothingAfterRelease(held, runsBefore);
      expect((await status(CONN_A))[0]!.checkpoint).toBeNull();

      // The next run starts from the start (no checkpoint of the old run) and deletes nothing.
      const from = provider.pages.length;
      await nango.triggerSync(KEY, [SYNC], CONN_A);
      expect(await triggered.result()).toBe('succeeded');
      expect(provider.pages[from]?.cursor).toBe('0');
      expect((await status(CONN_A))[0]).toMatchObject({
        status: 'SUCCESS',
        latestResult: { Contact: { added: 0, updated: 0, deleted: 0 } },
        recordCount: { Contact: provider.contacts.length },
      });
      await expectProviderData();
    } finally {
      held.release();
      provider.pageSize = 500;
    }
  });

  it("a run whose worker died while a full resync replaced it: the orchestrator refuses its script's late writes", async () => {
    const [item] = await status(CONN_A);
    const triggered = temporal.workflow.getHandle(`sync-${item!.id}-trigger`);
    provider.pageSize = 100;
    const held = provider.hold('500');
    try {
      await nango.triggerSync(KEY, [SYNC], CONN_A);
      await held.requested;
      const runsBefore = finishedRuns(stack).length;
      // Its worker dies: nobody is left to tell functions-runtime to stop the script, which waits on (until
      // its lease runs out, 5 s later).
      const worker = stack.workers.find((w) => w.process.exitCode === null && w.process.signalCode === null);
      worker!.process.kill('SIGKILL');
      await new Promise((resolve) => worker!.process.once('exit', resolve));
      provider.change(100, 500);
      await nango.triggerSync(KEY, [SYNC], CONN_A, { reset: true });
      stack.startWorker();
      expect(await triggered.result()).toBe('succeeded');
      expect((await status(CONN_A))[0]).toMatchObject({
        status: 'SUCCESS',
        latestResult: { Contact: expect.objectContaining({ added: 0, deleted: 0 }) },
        recordCount: { Contact: provider.contacts.length },
        checkpoint: null,
      });

      // The old script gets its stale page now, if its lease has not stopped it yet: its batchSave is
      // refused (sync_run_superseded), which ends it: no stale record, no checkpoint, no further page.
      await expectNothingAfterRelease(held, runsBefore);
      expect((await status(CONN_A))[0]).toMatchObject({ status: 'SUCCESS', checkpoint: null });
    } finally {
      held.release();
      provider.pageSize = 500;
    }
  });

  // Last: its runs share the fake provider's page log, which the tests above read.
  it('a connection deleted while the orchestrator is down and re-created under its id, heard of before the deletion: a new sync that the late deletion keeps, none of the old records', async () => {
    const old = await importWithSchedule('conn-e');
    const total = provider.contacts.length;
    expect((await waitForRun('conn-e', null)).recordCount).toEqual({ Contact: total });

    await stack.stopService('sync-orchestrator');
    await nango.deleteConnection(KEY, 'conn-e');
    // The deletion's event waits in the orchestrator's durable consumer. This test takes it from there
    // and holds it, so the orchestrator hears of the new connection first (the order that lost the new
    // connection its sync), then hands it back.
    const nc = await connect({ servers: stack.natsUrl });
    try {
      const consumer = await nc
        .jetstream()
        .consumers.get(EVENT_STREAM.name, EVENT_CONSUMERS.orchestratorConnections);
      const held = await consumer.next({ expires: 30_000 });
      expect(held?.json()).toMatchObject({ connectionId: 'conn-e', operation: 'deletion' });
      held!.working();

      // A new connection needs the orchestrator (its validate-connection scripts).
      await stack.startReplica('sync-orchestrator');
      const again = await api('POST', '/connections', {
        provider_config_key: KEY,
        connection_id: 'conn-e',
        credentials: { type: 'API_KEY', apiKey: API_KEY },
        connection_config: { origin: provider.url, account: 'acme' },
      });
      expect(again.status).toBe(201);
      const deadline = Date.now() + 60_000;
      let fresh: SyncStatusItem | undefined;
      for (;;) {
        fresh = (await status('conn-e').catch(() => []))[0];
        if (fresh && fresh.id !== old.id) break;
        held!.working();
        if (Date.now() > deadline)
          throw new Error(`no new sync for the re-created connection: ${JSON.stringify(fresh)}`);
        await sleep(250);
      }
      await expect(schedule(old.id)).rejects.toBeInstanceOf(ScheduleNotFoundError);
      // The deletion arrives now, late: it leaves the new connection's sync alone.
      held!.nak();
      const jsm = await nc.jetstreamManager();
      const handled = Date.now() + 30_000;
      for (;;) {
        const info = await jsm.consumers.info(EVENT_STREAM.name, EVENT_CONSUMERS.orchestratorConnections);
        if (info.num_pending === 0 && info.num_ack_pending === 0) break;
        if (Date.now() > handled) throw new Error('the orchestrator did not take the deletion back');
        await sleep(100);
      }
      expect((await status('conn-e')).map((s) => s.id)).toEqual([fresh.id]);
      expect((await schedule(fresh.id)).state.paused).toBe(false);
    } finally {
      await nc.close();
    }
    // Its first run finds no record of the deleted connection: everything is new again.
    const run = await waitForRun('conn-e', null);
    expect(run.latestResult).toEqual({ Contact: { added: total, updated: 0, deleted: 0 } });
    await nango.deleteConnection(KEY, 'conn-e');
  });

  it('answers a trigger with 503 service_unavailable and Retry-After while Temporal lacks the namespace or never answers, and runs it once Temporal is back', async () => {
    const trigger = () =>
      call(stack.gatewayUrl, 'POST', '/sync/trigger', {
        key: stack.secretKey,
        body: { provider_config_key: KEY, connection_id: CONN_A, syncs: [SYNC] },
      });
    // A Temporal that accepts connections and never says a word.
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const silentPort = (silent.address() as { port: number }).port;
    /** The first answer of an orchestrator started with `env` (a 503 of the gateway finding none is not it). */
    const answerWith = async (env: Record<string, string>) => {
      await stack.stopService('sync-orchestrator');
      await stack.startReplica('sync-orchestrator', env);
      for (;;) {
        const res = await trigger();
        if (res.status !== 503 || JSON.stringify(res.body).includes('Temporal')) return res;
        await sleep(250);
      }
    };
    try {
      for (const env of [
        { TEMPORAL_NAMESPACE: `absent-${randomUUID().slice(0, 8)}` },
        // A short deadline keeps the answer well inside the gateway's own request timeout on a busy machine.
        { TEMPORAL_ADDRESS: `127.0.0.1:${silentPort}`, TEMPORAL_CALL_DEADLINE_MS: '3000' },
      ] as Record<string, string>[]) {
        const res = await answerWith(env);
        expect({ status: res.status, retryAfter: res.headers.get('retry-after'), body: res.body }).toEqual({
          status: 503,
          retryAfter: expect.stringMatching(/^[0-9]+$/),
          body: { error: expect.objectContaining({ code: 'service_unavailable' }) },
        });
      }
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
      await stack.stopService('sync-orchestrator');
      await stack.startReplica('sync-orchestrator');
    }
    // The same request, retried, is taken once Temporal answers.
    const again = await waitForOk(trigger);
    expect(again.body).toEqual({ success: true });
  }, 300_000);
});
