// Runs inside Temporal's deterministic sandbox: import only @temporalio/workflow and types here.
import { proxyActivities } from '@temporalio/workflow';
import type * as activities from '../activities';

export interface PingInput {
  name: string;
}

const { greet } = proxyActivities<typeof activities>({ startToCloseTimeout: '10 seconds' });

/** Round trip through the worker: the service starts it, an activity answers. */
export async function pingWorkflow(input: PingInput): Promise<string> {
  return greet(input.name);
}
