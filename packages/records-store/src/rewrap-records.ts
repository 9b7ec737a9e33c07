import { setTimeout as sleep } from 'node:timers/promises';
import {
  newRewrapReport,
  type RewrapOptions,
  type RewrapReport as SharedRewrapReport,
} from '@switchboard/config';
import { SHARED_HEADER_BYTES, type EnvelopeCipher } from '@switchboard/crypto';
import type { PgPool } from '@switchboard/db';
import { binaryByteaArray } from './pg-binary-array';
import { payloadAad } from './record-keys';

/**
 * Failed records are named by their row id. `remaining` is 0 unless some failed, a replica still writes with
 * the old keyring, or a record stayed locked by a sync's write through every retry (run again).
 */
export type RewrapReport = SharedRewrapReport;

/** Binary payloads start with this byte (`SharedDataKey.sealBytes`); legacy text envelopes with `s`. */
const BINARY_FORMAT = 0x02;
/** Shortest binary payload: header, nonce and tag (an empty value). */
const BINARY_MIN_BYTES = SHARED_HEADER_BYTES + 12 + 16;
/** Rounds for records whose compare-and-set missed (a sync held or rewrote them); the pause doubles each time. */
const RETRIES = 5;
const RETRY_PAUSE_MS = 50;

/**
 * Whether a payload's data key is wrapped by another version than `$1`, from its first bytes only: the binary
 * form's version field, or a text envelope's second dot-separated field. Encrypted payloads do not compress,
 * so Postgres keeps the large ones uncompressed and slices these bytes without reading the whole value.
 */
const STALE = `(payload IS NOT NULL
  AND substring(payload from 1 for 5) <> ('\\x02'::bytea || int4send($1::int))
  AND NOT (substring(payload from 1 for 1) = 's'::bytea
    AND split_part(encode(substring(payload from 1 for 16), 'escape'), '.', 2) = $1::int::text))`;

/** A binary payload's key header is all this needs of it; a legacy text envelope is rewrapped whole. */
const COLUMNS = `id::text AS id, octet_length(payload) AS length, ${STALE} AS stale,
  CASE WHEN substring(payload from 1 for 1) = '\\x02'::bytea
    THEN substring(payload from 1 for ${SHARED_HEADER_BYTES}) ELSE payload END AS head`;

/** Where an environment's walk stands: the last row's key in `records_page_idx` after its environment. */
const PAGE_KEY = 'r.provider_config_key, r.connection_id, r.model, r.updated_at, r.id';

const SQL = {
  // In the primary key's order (`r.id`: a bare `id` would be the text column selected, which no index sorts).
  scan: `SELECT ${COLUMNS} FROM orchestrator.records r
    WHERE ($2::uuid IS NULL OR r.id > $2::uuid) AND ${STALE}
    ORDER BY r.id LIMIT $3`,
  /**
   * One environment's records, in the order of the page index (which leads with environment_id), so only
   * that environment's entries are read, not the whole table. A sync's write moves a row only forward in this
   * order (its updated_at grows), where the walk still finds it; an unchanged record keeps its updated_at.
   */
  scanEnvironment: (after: boolean) => `SELECT ${COLUMNS}, provider_config_key, connection_id, model,
      r.updated_at::text AS at FROM orchestrator.records r
    WHERE environment_id = $2::int
      ${after ? `AND (${PAGE_KEY}) > ($4::text, $5::text, $6::text, $7::timestamptz, $8::uuid)` : ''}
      AND ${STALE}
    ORDER BY ${PAGE_KEY} LIMIT $3`,
  reread: `SELECT ${COLUMNS} FROM orchestrator.records WHERE id = ANY($2::uuid[])`,
  /**
   * One set-based statement per batch. Compare-and-set: a binary payload still starts with the header that was
   * read (only the header is replaced: the record's own nonce, tag and ciphertext stay), a text one is still
   * the whole value that was read. Rows a sync's write holds are skipped rather than waited for (retried
   * later): a rewrap never queues behind a write, so it cannot deadlock one. updated_at stays: nothing
   * changed for the customer, and cursors stay valid.
   */
  swap: `WITH free AS (
      SELECT id FROM orchestrator.records WHERE id = ANY($1::uuid[]) FOR UPDATE SKIP LOCKED
    )
    UPDATE orchestrator.records r SET payload = CASE WHEN u.whole THEN u.next
      ELSE overlay(r.payload placing u.next from 1 for ${SHARED_HEADER_BYTES}) END
    FROM unnest($1::uuid[], $2::bytea[], $3::bytea[], $4::bool[]) AS u(id, old, next, whole), free
    WHERE free.id = u.id AND r.id = u.id AND CASE WHEN u.whole THEN r.payload = u.old
      ELSE substring(r.payload from 1 for ${SHARED_HEADER_BYTES}) = u.old END
    RETURNING r.id::text AS id`,
  remaining: `SELECT count(*)::int AS count FROM orchestrator.records
    WHERE ($2::int IS NULL OR environment_id = $2::int) AND ${STALE}`,
};

interface Row {
  id: string;
  /** With an environment: the row's place in the page index (see `SQL.scanEnvironment`). */
  provider_config_key?: string;
  connection_id?: string;
  model?: string;
  /** updated_at as Postgres prints it (microseconds kept); named apart so ORDER BY sorts the column. */
  at?: string;
  length: number | null;
  stale: boolean | null;
  /** A binary payload's key header, or a text envelope's whole bytes; null when pruned. */
  head: Buffer | null;
}

interface Swap {
  id: string;
  old: Buffer;
  next: Buffer;
  /** A text envelope: the whole value is compared and replaced. */
  whole: boolean;
}

/**
 * Rewraps every record payload's data key under the current (highest) master key, in batches: in id order, or
 * with `environmentId` in that environment's page-index order (reading its rows only),
 * while syncs keep writing. A chunk of records written together shares one data key (one header, the first
 * `SHARED_HEADER_BYTES` of each payload), and readers cache one unwrapped key per header: each old header is
 * rewrapped once and mapped to one new header for the whole run, so records that shared a key still share one
 * afterwards (a rewrap per record would double the AES work of every page read from then on). The map holds
 * one entry per distinct old header (~200 bytes): rotate a very large installation per environment.
 * Safe to run again: payloads already on the current version are skipped.
 */
export async function rewrapAllRecords(
  pool: PgPool,
  cipher: EnvelopeCipher,
  currentVersion: number,
  options: RewrapOptions = {},
): Promise<RewrapReport> {
  const batchSize = options.batchSize ?? 500;
  const environmentId = options.environmentId ?? null;
  const report = newRewrapReport<string>(currentVersion);
  // Old header -> its new header (latin1 strings: the smallest keys and values V8 keeps); null: cannot be opened.
  const headers = new Map<string, string | null>();
  const swapOf = (row: Row): Swap | undefined => {
    const head = row.head!;
    if (head[0] === BINARY_FORMAT && (row.length ?? 0) >= BINARY_MIN_BYTES) {
      const old = head.toString('latin1');
      let next = headers.get(old);
      if (next === undefined) {
        try {
          next = cipher.rewrapSharedHeader(head).toString('latin1');
        } catch {
          next = null;
        }
        headers.set(old, next);
      }
      if (next !== null) return { id: row.id, old: head, next: Buffer.from(next, 'latin1'), whole: false };
    } else {
      try {
        return { id: row.id, old: head, next: cipher.rewrap(head, payloadAad(row.id)), whole: true };
      } catch {
        // Not openable: reported below.
      }
    }
    report.failed.push(row.id);
    return undefined;
  };

  let last: Row | undefined;
  const scan = async (): Promise<Row[]> => {
    if (environmentId === null) {
      return (await pool.query<Row>(SQL.scan, [currentVersion, last?.id ?? null, batchSize])).rows;
    }
    const after = last ? [last.provider_config_key, last.connection_id, last.model, last.at, last.id] : [];
    const query = SQL.scanEnvironment(last !== undefined);
    return (await pool.query<Row>(query, [currentVersion, environmentId, batchSize, ...after])).rows;
  };
  for (;;) {
    const rows = await scan();
    if (rows.length === 0) break;
    last = rows[rows.length - 1]!;
    report.scanned += rows.length;

    const pending = rows.map(swapOf).filter((s): s is Swap => s !== undefined);
    const { rewrapped, concurrent } = await swapWithRetries(pool, pending, swapOf, currentVersion);
    report.rewrapped += rewrapped;
    report.changedConcurrently += concurrent;
    options.onProgress?.(report);
  }
  const {
    rows: [left],
  } = await pool.query<{ count: number }>(SQL.remaining, [currentVersion, environmentId]);
  report.remaining = left?.count ?? 0;
  return report;
}

async function swap(pool: PgPool, swaps: Swap[]): Promise<Set<string>> {
  const { rows } = await pool.query<{ id: string }>(SQL.swap, [
    swaps.map((s) => s.id),
    binaryByteaArray(swaps.map((s) => s.old)),
    binaryByteaArray(swaps.map((s) => s.next)),
    swaps.map((s) => s.whole),
  ]);
  return new Set(rows.map((r) => r.id));
}

/**
 * Swaps the batch's headers, then retries those a sync held or rewrote meanwhile (read again, pauses
 * doubling); answers how many were rewrapped and how many changed under the run.
 */
async function swapWithRetries(
  pool: PgPool,
  first: Swap[],
  swapOf: (row: Row) => Swap | undefined,
  currentVersion: number,
): Promise<{ rewrapped: number; concurrent: number }> {
  let rewrapped = 0;
  let pending = first;
  const concurrent = new Set<string>();
  for (let attempt = 0; pending.length > 0; attempt++) {
    const swapped = await swap(pool, pending);
    rewrapped += swapped.size;
    const missed = pending.filter((s) => !swapped.has(s.id));
    if (missed.length === 0 || attempt === RETRIES) break;
    // Held by a sync's write, or written meanwhile: look again once the write is likely done.
    await sleep(RETRY_PAUSE_MS * 2 ** attempt);
    const before = new Map(missed.map((s) => [s.id, s.old]));
    const { rows: now } = await pool.query<Row>(SQL.reread, [currentVersion, missed.map((s) => s.id)]);
    pending = [];
    const found = new Set<string>();
    for (const row of now) {
      found.add(row.id);
      if (!row.head || !row.head.equals(before.get(row.id)!)) concurrent.add(row.id);
      if (!row.stale || !row.head) continue;
      const next = swapOf(row);
      if (next) pending.push(next);
    }
    // Deleted meanwhile (emptyCache, a deleted connection): nothing left to rewrap.
    for (const s of missed) if (!found.has(s.id)) concurrent.add(s.id);
  }
  return { rewrapped, concurrent: concurrent.size };
}
