import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DefaultLogger, Runtime, Worker, type WorkflowBundle } from '@temporalio/worker';
import { workerTracing } from '../temporal/tracing';
import { currentWorkflowBundle } from '../../test/workflows/current-bundle';

/**
 * Determinism: the histories in test/fixtures/workflow-histories/ (recorded runs, as Temporal exports them)
 * replayed against the workflows as they are now, bundled as the build bundles them. A change that would
 * make a running workflow take other steps than its history (an activity added, removed or reordered, a
 * timer, a continue-as-new moved) fails here, before it fails the workflows running in production. An
 * intended change goes behind `patched()`, or its histories are recorded again (the README, "Workflow
 * tests").
 */

jest.setTimeout(60_000);

const HISTORIES = join(__dirname, '../../test/fixtures/workflow-histories');
const fixtures = readdirSync(HISTORIES)
  .filter((name) => name.endsWith('.json'))
  .sort();
const historyOf = (name: string): unknown => JSON.parse(readFileSync(join(HISTORIES, name), 'utf8'));

/** Every history replayed, one result per file: its name and the replay's error, if any. */
async function replayAll(bundle: WorkflowBundle, histories: [name: string, history: unknown][]) {
  const results: { history: string; error?: string }[] = [];
  const replays = Worker.runReplayHistories(
    { workflowBundle: bundle, replayName: 'workflow-histories', sinks: workerTracing().sinks },
    histories.map(([name, history]) => ({ workflowId: name, history })),
  );
  for await (const result of replays) {
    results.push({
      history: result.workflowId,
      ...(result.error ? { error: `${result.error.name}: ${result.error.message}` } : {}),
    });
  }
  return results;
}

let current: WorkflowBundle;

beforeAll(async () => {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  current = await currentWorkflowBundle();
});

describe('recorded workflow histories replayed against the current workflows', () => {
  it('holds a history of each protocol path', () => {
    // More may sit beside them: histories of a workflow's versions before a patch, or exported from a
    // deployment.
    expect(fixtures).toEqual(
      expect.arrayContaining([
        'async-action-retried.json',
        'e2e-async-action-retried.json',
        'e2e-full-resync-cancelled-scheduled-run.json',
        'e2e-full-resync-trigger.json',
        'e2e-scheduled-run-checkpointed.json',
        'e2e-scheduled-run-skipped.json',
        'e2e-triggered-buffer-one.json',
        'full-resync-cancelled-scheduled-run.json',
        'full-resync-trigger.json',
        'scheduled-run-retried-attempt.json',
        'scheduled-run.json',
        'triggered-buffer-one.json',
        'triggered-continue-as-new.json',
        'triggered-continued.json',
        'triggered-full-resync-during-run.json',
        'triggered-waits-for-scheduled.json',
      ]),
    );
  });

  it('replays every one of them without a nondeterminism', async () => {
    const replayed = await replayAll(
      current,
      fixtures.map((name) => [name, historyOf(name)]),
    );
    expect(replayed).toEqual(fixtures.map((history) => ({ history })));
  });

  it('fails when the workflows take other steps than a history recorded', async () => {
    // As if `syncWorkflow` had begun with another activity when this history was recorded: the same
    // mismatch a change of the workflow against an unchanged history gives.
    const history = historyOf('scheduled-run.json') as {
      events: { activityTaskScheduledEventAttributes?: { activityType: { name: string } } }[];
    };
    const first = history.events.find((e) => e.activityTaskScheduledEventAttributes);
    expect(first?.activityTaskScheduledEventAttributes?.activityType.name).toBe('beginSyncRun');
    first!.activityTaskScheduledEventAttributes!.activityType.name = 'syncResetPending';
    const [result] = await replayAll(current, [['scheduled-run.json', history]]);
    expect(result).toEqual({
      history: 'scheduled-run.json',
      error: expect.stringMatching(/^DeterminismViolationError: .*'syncResetPending'.*'beginSyncRun'/),
    });
  });
});
