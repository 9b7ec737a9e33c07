import type { EnvelopeCipher } from '@switchboard/crypto';
import type { PgPool, PgPoolClient } from '@switchboard/db';
import { copyOut } from './pg-copy-out';
import {
  Cursor,
  RecordIds,
  externalIdOf,
  payloadAad,
  type DecodedCursor,
  type RecordScope,
} from './record-keys';
import { recordJson } from './record-json';
import { RecordsStoreError } from './records-store.errors';
import { filterCondition, int, plainTextArray, ts } from './records.sql';
import type { LastAction, ListJsonResult, ListQuery, ListResult, StoredRecord } from './records.types';

/** One record of a page, its payload still as the JSON bytes it was saved as. */
interface PageRecord {
  /** The decrypted payload (UTF-8 JSON), null when pruned. */
  payload: Buffer | null;
  externalId: string;
  metadata: StoredRecord['_nango_metadata'];
}

/**
 * The read side of the records store: `GET /records` pages (as records or as JSON bytes) and a model's
 * last cursor. Payloads are decrypted as their rows arrive.
 */
export class RecordsReader {
  /** See `scratchCopy`. */
  private scratch = Buffer.allocUnsafe(64 * 1024);

  constructor(
    private readonly pool: PgPool,
    private readonly cipher: EnvelopeCipher,
  ) {}

  async lastCursor(scope: RecordScope, model: string): Promise<string | null> {
    const {
      rows: [row],
    } = await this.pool.query<{ sort: string; id: string }>(
      `SELECT ${ts('updated_at')} AS sort, id::text AS id FROM orchestrator.records
      WHERE environment_id = $1 AND provider_config_key = $2 AND connection_id = $3 AND model = $4
      ORDER BY records.updated_at DESC, records.id DESC LIMIT 1`,
      [scope.environmentId, scope.providerConfigKey, scope.connectionId, model],
    );
    return row ? Cursor.encode(row.sort, row.id) : null;
  }

  /**
   * A page of records, Nango's `GET /records`: ordered by (updated_at, id), `next_cursor` set when more
   * exist. Throws `invalid_cursor` (Nango answers it as a server error) for a cursor it cannot read.
   */
  async list(scope: RecordScope, model: string, query: ListQuery): Promise<ListResult> {
    const records: StoredRecord[] = [];
    const page = await this.page(scope, model, query, (r) =>
      records.push({
        ...(r.payload === null ? {} : (JSON.parse(r.payload.toString('utf8')) as Record<string, unknown>)),
        // The payload may be empty (pruned): the external id is always the record's id.
        id: r.externalId,
        _nango_metadata: r.metadata,
      }),
    );
    return { records, next_cursor: page.next_cursor };
  }

  /**
   * The same page as `list`, as JSON bytes (`GET /records` passes them through the gateway untouched): no
   * record is parsed into objects and serialised again, which for a 1000-record page was most of the
   * CPU both services spent on it, nor decoded into text and encoded back (bench/README.md, Records). The
   * bytes are what `JSON.stringify` makes of `list`'s records, UTF-8, joined by commas (no brackets).
   */
  async listJson(scope: RecordScope, model: string, query: ListQuery): Promise<ListJsonResult> {
    const chunks: (Buffer | string)[] = [];
    const page = await this.page(scope, model, query, (r) => {
      if (chunks.length > 0) chunks.push(',');
      // Each payload is a buffer of its own (the decipher's output): its pieces are kept as they are.
      chunks.push(...recordJson(r.payload, r.externalId, r.metadata));
    });
    return { recordsJson: chunks, count: page.count, next_cursor: page.next_cursor };
  }

  /**
   * Copies a sealed payload out of node-postgres's receive buffer into one buffer reused for every record
   * (it is decrypted at once, synchronously), answering the copy: valid until the next call. Decrypting
   * straight from the receive buffer cost the service more CPU per page, most of it more garbage
   * collection (the views keep its socket chunks alive, we think); with the copy, no more than before the
   * payloads were bytea (bench/README.md, "Why the current settings").
   */
  private scratchCopy(bytes: Buffer): Buffer {
    if (bytes.length > this.scratch.length) this.scratch = Buffer.allocUnsafe(bytes.length * 2);
    bytes.copy(this.scratch);
    return this.scratch.subarray(0, bytes.length);
  }

  /**
   * Reads a page, giving each record to `emit` as its row arrives; answers how many there were and the
   * page's next cursor.
   */
  private async page(
    scope: RecordScope,
    model: string,
    query: ListQuery,
    emit: (record: PageRecord) => void,
  ): Promise<{ count: number; next_cursor: string | null }> {
    let cursor: DecodedCursor | undefined;
    if (query.cursor) {
      cursor = Cursor.decode(query.cursor);
      // A cursor is only ever one we gave out; anything else is the caller's mistake, not ours.
      if (!cursor) throw new RecordsStoreError('invalid_cursor', 'The cursor is not one this API gave out');
    }
    // Each row is decrypted as it arrives.
    let count = 0;
    let lastCursor: string | undefined;
    let bytes = 0;
    let more = false;
    const client = await this.pool.connect();
    try {
      const sql = pageSql(client, scope, model, query, cursor);
      await copyOut(client, sql, 9, (row) => {
        if (more) return;
        if (count === query.limit) {
          more = true;
          return;
        }
        const id = row.text()!;
        const externalId = row.text()!;
        const payload = row.bytes();
        const sizeBytes = row.int4()!;
        // Room for the metadata next to the payload; the budget keeps one reply within a NATS message.
        const size = sizeBytes + 300;
        if (query.maxBytes !== undefined && count > 0 && bytes + size > query.maxBytes) {
          more = true;
          return;
        }
        bytes += size;
        const firstSeen = row.text()!;
        const lastModified = row.text()!;
        const deletedAt = row.text();
        const prunedAt = row.text();
        const lastAction = row.text() as LastAction;
        count++;
        lastCursor = Cursor.encode(lastModified, id);
        emit({
          payload: payload ? this.cipher.decryptBytes(this.scratchCopy(payload), payloadAad(id)) : null,
          externalId,
          // In the API's key order.
          metadata: {
            first_seen_at: firstSeen,
            last_modified_at: lastModified,
            last_action: lastAction,
            deleted_at: deletedAt,
            pruned_at: prunedAt,
            cursor: lastCursor,
          },
        });
      });
    } finally {
      client.release();
    }
    return { count, next_cursor: more && lastCursor ? lastCursor : null };
  }
}

/**
 * The page's statement: a binary COPY (`copyOut`: the payloads as their bytes, not hex), which takes no
 * parameters, so every value is a literal escaped by the client (escapeLiteral) or an integer.
 */
function pageSql(
  client: Pick<PgPoolClient, 'escapeLiteral'>,
  scope: RecordScope,
  model: string,
  query: ListQuery,
  cursor: DecodedCursor | undefined,
): string {
  const ids = new RecordIds(scope, model);
  const lit = (value: string) => client.escapeLiteral(value);
  const conditions: string[] = [];
  if (cursor)
    conditions.push(`AND (updated_at, id) > (${lit(cursor.sort)}::timestamptz, ${lit(cursor.id)}::uuid)`);
  if (query.modifiedAfter) conditions.push(`AND updated_at >= ${lit(query.modifiedAfter)}::timestamptz`);
  if (query.externalIds) {
    const wanted = query.externalIds.map((e) => ids.of(externalIdOf(e)));
    conditions.push(`AND id = ANY(${lit(plainTextArray(wanted))}::uuid[])`);
  }
  conditions.push(filterCondition(query.filter));
  // Every column but payload and size_bytes as text (what the API prints), read in this order by `page`.
  // ORDER BY names the table's columns: a bare `id` would be the output column `id::text`, which the
  // index cannot give in order, so every row of the model would be read and sorted for each page
  // instead of the first `limit` taken from records_page_idx.
  return `COPY (SELECT id::text, external_id, payload, size_bytes,
      ${ts('created_at')}, ${ts('updated_at')}, ${ts('deleted_at')}, ${ts('pruned_at')},
      CASE WHEN deleted_at IS NOT NULL THEN 'DELETED' WHEN created_at = updated_at THEN 'ADDED' ELSE 'UPDATED' END
    FROM orchestrator.records
    WHERE environment_id = ${int(scope.environmentId)} AND provider_config_key = ${lit(scope.providerConfigKey)}
      AND connection_id = ${lit(scope.connectionId)} AND model = ${lit(model)}
      ${conditions.join(' ')}
    ORDER BY records.updated_at ASC, records.id ASC
    LIMIT ${int(query.limit + 1)}) TO STDOUT (FORMAT binary)`;
}
