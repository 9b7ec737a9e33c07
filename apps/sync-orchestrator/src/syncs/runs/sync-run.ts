import type { Caller } from '@switchboard/contracts';
import type { OrchestratorDb } from '@switchboard/db';
import type { NatsRequester } from '@switchboard/messaging';
import { WorkflowNotFoundError, type WorkflowClient } from '@temporalio/client';
import type { NatsConnection } from 'nats';
import type { OrchestratorEnv } from '../../config/env';
import type { SyncRecords } from '../sync-records';

export const SYNC_RUN_STATUS = { running: 'RUNNING', success: 'SUCCESS', stopped: 'STOPPED' } as const;
/** `WEBHOOK`: a run of the script's onWebhook handler with a provider webhook's payload. */
export type SyncRunType = 'INITIAL' | 'INCREMENTAL' | 'FULL' | 'WEBHOOK';

/** A run the workflow may go on with: what the script needs, fixed at its start (history keeps it). */
export interface BegunSyncRun {
  runId: string;
  caller: Caller;
  provider: string;
  timeoutMs: number;
  heartbeatTimeoutMs: number;
  /** A WEBHOOK run: the provider's payload the onWebhook handler gets (added by the workflow). */
  webhookPayload?: unknown;
}

/** The run that holds a sync (its RUNNING scheduled or triggered run) and the workflow running it. */
export interface SyncRunHolder {
  runId: string;
  workflowId: string;
}

/** `begin`'s answer while another run holds the sync. */
export interface SyncBusy {
  busy: SyncRunHolder;
}

export type SyncRunOutcome =
  | { status: 'succeeded' }
  | { status: 'failed'; error: { type: string; description: string; payload?: unknown } }
  | { status: 'cancelled' };

export interface SyncRunnerDeps {
  db: OrchestratorDb;
  nats: NatsRequester;
  nc: NatsConnection;
  records: SyncRecords;
  /** Whether a holder's workflow still runs (else its run was abandoned), and a full resync's cancel. */
  workflows: Pick<WorkflowClient, 'getHandle'>;
  env: Pick<
    OrchestratorEnv,
    'SWITCHBOARD_SYNC_TIMEOUT_MS' | 'SWITCHBOARD_SYNC_HEARTBEAT_TIMEOUT_MS' | 'SWITCHBOARD_WEBHOOK_TIMEOUT_MS'
  >;
}

/** Runs that hold their sync: scheduled and triggered ones (webhook runs hold nothing). */
export const NOT_WEBHOOK = { not: 'WEBHOOK' } as const;

/** Whether a workflow's latest execution still runs (an unknown workflow does not). */
export async function workflowRunning(
  workflows: Pick<WorkflowClient, 'getHandle'>,
  workflowId: string,
): Promise<boolean> {
  try {
    return (await workflows.getHandle(workflowId).describe()).status.name === 'RUNNING';
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return false;
    throw error;
  }
}
