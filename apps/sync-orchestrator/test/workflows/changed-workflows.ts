// A workflow change that breaks determinism, for replay.spec.ts: the same workflow type as the service's,
// whose first step is another activity than the one its recorded histories scheduled first.
import { proxyActivities } from '@temporalio/workflow';
import type { SyncActivities, SyncWorkflowInput } from '../../src/activities/sync.activities';

const { syncResetPending } = proxyActivities<SyncActivities>({ startToCloseTimeout: '1 minute' });

export async function syncWorkflow(input: SyncWorkflowInput): Promise<string> {
  return (await syncResetPending({ syncId: input.syncId })) ? 'reset' : 'skipped';
}
