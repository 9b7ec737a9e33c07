import type { PgPoolClient } from '@switchboard/db';

export interface ModelCounts {
  added: number;
  updated: number;
  deleted: number;
}

export type WriteOp = 'save' | 'update' | 'delete';

/**
 * `nango.setMergingStrategy`: `override` (default) writes every change; `ignore_if_modified_after` leaves
 * alone a record modified after `cursor` (e.g. by a webhook run while this run was fetching), and the
 * cursor then moves with the run's own writes (`WriteResult.mergingCursor`), as Nango does.
 */
export type MergingStrategy =
  | { strategy: 'override' }
  | { strategy: 'ignore_if_modified_after'; cursor?: string | null };

export interface WriteResult extends ModelCounts {
  unchanged: number;
  /** External ids that appeared more than once in the batch: only the first one was written. */
  nonUniqueKeys: string[];
  /** Under `ignore_if_modified_after`: the cursor to send with the next write of the model. */
  mergingCursor?: string | null;
}

export type LastAction = 'ADDED' | 'UPDATED' | 'DELETED';

export interface NangoRecordMetadata {
  first_seen_at: string;
  last_modified_at: string;
  last_action: LastAction;
  deleted_at: string | null;
  pruned_at: string | null;
  cursor: string;
}

export type StoredRecord = Record<string, unknown> & { id: string; _nango_metadata: NangoRecordMetadata };

export interface ListQuery {
  modifiedAfter?: string;
  limit: number;
  /** Nango's `filter` (comma list of added|updated|deleted, any case). */
  filter?: string;
  cursor?: string;
  externalIds?: string[];
  /** Stop before the page's records pass this many bytes of JSON (always at least one record). */
  maxBytes?: number;
}

export interface ListResult {
  records: StoredRecord[];
  next_cursor: string | null;
}

/**
 * A page as JSON: the records' JSON joined by commas (no brackets), in order, ready to be spliced into a
 * body (chunks, not one buffer: whoever sends them joins them once, with whatever goes before). Saved bytes
 * stay bytes; the short pieces written here (metadata, commas) stay text, encoded straight into that one
 * buffer (a Buffer per piece cost the orchestrator a new 8 KB pool every ~20 records).
 */
export interface ListJsonResult {
  recordsJson: (Buffer | string)[];
  count: number;
  next_cursor: string | null;
}

/** A node-postgres client inside BEGIN: every statement of the store runs on one (no Prisma in between). */
export type Tx = Pick<PgPoolClient, 'query'>;

/** The transaction's own client: also escapes the literals of the statements sent with BEGIN and COMMIT. */
export type TxClient = Pick<PgPoolClient, 'query' | 'escapeLiteral'>;

/**
 * Checks, first thing in a write's transaction, that the writer may still write (a sync script's run is
 * still the current one); throws to refuse, nothing written.
 */
export type WriteFence = (tx: Tx) => Promise<void>;
