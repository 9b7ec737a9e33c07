import type { ModelCounts, RecordScope } from '@switchboard/records-store';

export type { ModelCounts, RecordScope };

/**
 * What sync control needs of the records store (`RecordsStore` of @switchboard/records-store, which
 * satisfies it): counts of one run, deletes at the end of a run and on reset, record counts for the status.
 */
export interface SyncRecords {
  runCounts(runId: string): Promise<Record<string, ModelCounts>>;
  deleteRecords(scope: RecordScope, models: string[]): Promise<number>;
  recordCounts(scope: RecordScope, models: string[]): Promise<Record<string, number>>;
  deleteUnseen(scope: RecordScope, model: string, runId: string): Promise<number>;
  /** Drops which records a finished run saw (its counts stay), unless an open deletion window holds it. */
  forgetRun(runId: string): Promise<void>;
  /** Drops the models' open deletion windows (`trackDeletesStart` with no end yet): a full resync. */
  closeDeleteWindows(scope: RecordScope, models: string[]): Promise<void>;
  /** Every record of a connection, all models (the connection is being deleted). */
  deleteAllRecords(scope: RecordScope): Promise<number>;
}

export const SYNC_RECORDS = Symbol('SYNC_RECORDS');
