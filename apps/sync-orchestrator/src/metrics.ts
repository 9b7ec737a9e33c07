import { AttributeSets, meterFor } from '@switchboard/observability';

const meter = meterFor('@switchboard/sync-orchestrator');

/**
 * Sync metrics, recorded by `finishSyncRun` (syncs/sync-runner.ts), the activity that closes a run (never
 * from workflow code: Temporal's workflow sandbox must stay deterministic and has no
 * meter). `switchboard.sync.run.duration` by sync type (`full`/`incremental`) and outcome;
 * `switchboard.sync.records` by kind (`added`, `updated`, `deleted`). Sync and integration names are
 * left out: customers choose them, so they are unbounded.
 */
const runDuration = meter.createHistogram('switchboard.sync.run.duration', {
  description: 'Sync run durations, by sync type and outcome',
  unit: 's',
  advice: { explicitBucketBoundaries: [0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 1800, 3600, 7200] },
});
const records = meter.createCounter('switchboard.sync.records', {
  description: 'Records written by sync runs, by kind',
});
const sets = new AttributeSets(64);

export interface SyncRunMetrics {
  syncType: 'full' | 'incremental';
  outcome: 'success' | 'failure' | 'cancelled';
  durationMs: number;
  records: { added: number; updated: number; deleted: number };
}

export function recordSyncRun(run: SyncRunMetrics): void {
  runDuration.record(
    run.durationMs / 1000,
    sets.get(`run\u0000${run.syncType}\u0000${run.outcome}`, () => ({
      'switchboard.sync.type': run.syncType,
      'switchboard.sync.outcome': run.outcome,
    })),
  );
  for (const kind of ['added', 'updated', 'deleted'] as const) {
    if (run.records[kind] > 0)
      records.add(
        run.records[kind],
        sets.get(`records\u0000${kind}`, () => ({ 'switchboard.sync.records.kind': kind })),
      );
  }
}

/**
 * `switchboard.events.dead_lettered`: events of the event stream this service gave up on, by consumer
 * (durable name) and reason (`malformed`, `permanent`, `exhausted`): logged with their id and never
 * handed out again.
 */
const deadLettered = meter.createCounter('switchboard.events.dead_lettered', {
  description: 'Stream events given up on (malformed, failing permanently or on every try), by consumer',
});

export function recordDeadLetter(consumer: string, reason: 'malformed' | 'permanent' | 'exhausted'): void {
  deadLettered.add(
    1,
    sets.get(`dead\u0000${consumer}\u0000${reason}`, () => ({
      'messaging.consumer.group.name': consumer,
      'switchboard.events.reason': reason,
    })),
  );
}
