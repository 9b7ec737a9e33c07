import type { EnvelopeCipher, SharedDataKey } from '@switchboard/crypto';
import type { PgPool, PgQueryConfig } from '@switchboard/db';
import deepmerge from 'deepmerge';
import { binaryByteaArray, binaryTextArray } from './pg-binary-array';
import { copyOut } from './pg-copy-out';
import {
  Cursor,
  RecordIds,
  dataHash,
  externalIdOf,
  payloadAad,
  type DecodedCursor,
  type RecordScope,
} from './record-keys';
import { RecordsStoreError } from './records-store.errors';
import { lockModel, transaction } from './records-transaction';
import { SQL, countStatement, lockKey, plainTextArray } from './records.sql';
import type {
  MergingStrategy,
  ModelCounts,
  Tx,
  TxClient,
  WriteFence,
  WriteOp,
  WriteResult,
} from './records.types';

/** Rows per statement: one set-based statement per chunk, as Nango's batch size. */
const CHUNK = 1000;

interface Incoming {
  id: string;
  externalId: string;
  record: Record<string, unknown>;
}

interface Existing {
  id: string;
  data_hash: string;
  deleted: boolean;
  pruned: boolean;
  /** Modified after the merging cursor: `ignore_if_modified_after` leaves it alone. */
  locked: boolean;
  payload: Buffer | null;
}

/** A saved record's JSON and its data_hash. */
interface Hashed {
  json: string;
  hash: string;
}
const hashRecord = (incoming: Incoming): Hashed => {
  const json = JSON.stringify(incoming.record);
  return { json, hash: dataHash(json) };
};

interface Write {
  id: string;
  externalId: string;
  hash: string;
  payload: Buffer;
  size: number;
  /** A change the customer sees: updated_at moves. A pruned payload restored unchanged keeps it. */
  touch: boolean;
}

/** Nango merges arrays element by element (a shorter update keeps the old tail), objects key by key. */
const mergeRecord = (target: unknown, source: unknown): Record<string, unknown> =>
  deepmerge(target as object, source as object, {
    arrayMerge: (old: unknown[], incoming: unknown[]) =>
      Array.from({ length: Math.max(old.length, incoming.length) }, (_, i) =>
        i < incoming.length
          ? i < old.length && isMergeable(old[i]) && isMergeable(incoming[i])
            ? mergeRecord(old[i], incoming[i])
            : incoming[i]
          : old[i],
      ),
  }) as Record<string, unknown>;
const isMergeable = (v: unknown) => v !== null && typeof v === 'object';

const withoutMetadata = ({ _nango_metadata: _ignored, ...record }: Record<string, unknown>) => record;

/** What one chunk changed; `maxTouched` is the greatest id whose updated_at moved (the merging cursor's). */
interface ChunkOutcome extends ModelCounts {
  unchanged: number;
  maxTouched: string | undefined;
}

const noChange = (): ChunkOutcome => ({
  added: 0,
  updated: 0,
  deleted: 0,
  unchanged: 0,
  maxTouched: undefined,
});

/**
 * The write side of the records store: batchSave, batchUpdate and batchDelete of a sync run, one
 * transaction per call, one set-based statement per chunk of `CHUNK` records.
 */
export class RecordsWriter {
  constructor(
    private readonly pool: PgPool,
    private readonly cipher: EnvelopeCipher,
  ) {}

  /** batchSave / batchUpdate / batchDelete of one run; `model` is the full model key (`Model::variant` when not base). */
  async write(
    scope: RecordScope,
    model: string,
    records: Record<string, unknown>[],
    op: WriteOp,
    runId: string,
    options: { merging?: MergingStrategy; fence?: WriteFence } = {},
  ): Promise<WriteResult> {
    const ids = new RecordIds(scope, model);
    const { unique, nonUniqueKeys } = this.prepare(records, ids);
    const merging = options.merging ?? { strategy: 'override' };
    const cursor =
      merging.strategy === 'ignore_if_modified_after' && merging.cursor
        ? Cursor.decode(merging.cursor)
        : undefined;
    const result: WriteResult = { added: 0, updated: 0, deleted: 0, unchanged: 0, nonUniqueKeys };
    if (merging.strategy === 'ignore_if_modified_after') result.mergingCursor = merging.cursor ?? null;
    if (unique.length === 0) return result;

    // Without a fence the lock is the transaction's first statement and goes with BEGIN; with one, the
    // fence comes first (as before: the run's row, then the model's lock).
    const fence = options.fence;
    const begin = fence ? undefined : (tx: TxClient) => SQL.lockLiteral(lockKey(tx, scope, model));
    await transaction(
      this.pool,
      async (tx) => {
        if (fence) {
          await fence(tx);
          await lockModel(tx, scope, model);
        }
        let lastWritten: string | undefined;
        for (let i = 0; i < unique.length; i += CHUNK) {
          const chunk = unique.slice(i, i + CHUNK);
          const seen = op === 'delete' ? undefined : { runId, model };
          // The chunk's existing rows are read while this process serialises and hashes the records (the
          // statement is on the wire before the work starts): node's CPU and Postgres's overlap.
          const pending = this.existing(tx, chunk, cursor, op === 'update', seen);
          pending.catch(() => undefined); // awaited below; a throw in between must not leave it unhandled
          const hashed = op === 'save' ? chunk.map(hashRecord) : undefined;
          const existing = await pending;
          const outcome =
            op === 'delete'
              ? await this.deleteChunk(tx, chunk, existing, runId)
              : await this.upsertChunk(tx, scope, model, chunk, existing, runId, op, hashed);
          result.added += outcome.added;
          result.updated += outcome.updated;
          result.deleted += outcome.deleted;
          result.unchanged += outcome.unchanged;
          if (outcome.maxTouched && (!lastWritten || outcome.maxTouched > lastWritten)) {
            lastWritten = outcome.maxTouched;
          }
        }
        // The run's counts and the model's total go with COMMIT (one round trip); the answer is now().
        return {
          commitWith: countStatement(tx, scope, model, runId, result),
          committed: (rows) => {
            if (merging.strategy === 'ignore_if_modified_after' && lastWritten) {
              // Every row this transaction touched carries its start time (now()): the last one written is
              // (now(), greatest id), which is where the next batch's cursor starts.
              result.mergingCursor = Cursor.encode((rows[0] as { now: string }).now, lastWritten);
            }
          },
        };
      },
      begin,
    );
    return result;
  }

  private prepare(records: Record<string, unknown>[], ids: RecordIds) {
    const seen = new Set<string>();
    const unique: Incoming[] = [];
    const nonUniqueKeys: string[] = [];
    records.forEach((raw, index) => {
      const id = raw?.id;
      if (
        id === undefined ||
        id === null ||
        id === '' ||
        (typeof id !== 'string' && typeof id !== 'number')
      ) {
        throw new RecordsStoreError(
          'invalid_body',
          `record ${index} has no "id" (a non-empty string or a number): every record needs one`,
        );
      }
      const externalId = externalIdOf(id);
      if (seen.has(externalId)) {
        nonUniqueKeys.push(externalId);
        return;
      }
      seen.add(externalId);
      // A record read back from the API carries _nango_metadata; it is not part of the record (copied
      // without it only then: a copy of every record is avoidable work).
      const record = Object.hasOwn(raw, '_nango_metadata') ? withoutMetadata(raw) : raw;
      unique.push({ id: ids.of(externalId), externalId, record });
    });
    return { unique, nonUniqueKeys: [...new Set(nonUniqueKeys)] };
  }

  private async existing(
    tx: TxClient,
    chunk: Incoming[],
    cursor: DecodedCursor | undefined,
    withPayload: boolean,
    seen: { runId: string; model: string } | undefined,
  ): Promise<Map<string, Existing>> {
    const values: (string | null)[] = [
      plainTextArray(chunk.map((r) => r.id)),
      cursor?.sort ?? null,
      cursor?.id ?? null,
    ];
    if (seen) values.push(seen.runId, seen.model);
    const existing = new Map<string, Existing>();
    if (withPayload) {
      // batchUpdate merges into the payloads: by binary COPY, as a page (the bytes, not hex; no parameters).
      const text = SQL.existing(!!cursor, true, !!seen, (n) => {
        const value = values[n - 1];
        return value === null || value === undefined ? 'NULL' : tx.escapeLiteral(value);
      });
      await copyOut(tx, `COPY (${text}) TO STDOUT (FORMAT binary)`, 6, (row) => {
        const id = row.text()!;
        const entry = {
          id,
          data_hash: row.text()!,
          deleted: row.bool()!,
          pruned: row.bool()!,
          locked: row.bool()!,
        };
        const payload = row.bytes();
        // Copied: the row's bytes are node-postgres's receive buffer, reused once this returns.
        existing.set(id, { ...entry, payload: payload && Buffer.from(payload) });
      });
      return existing;
    }
    const { rows } = await tx.query<[string, string, boolean, boolean, boolean]>({
      name: `records_existing_${Number(!!cursor)}0${Number(!!seen)}`,
      text: SQL.existing(!!cursor, false, !!seen),
      values,
      rowMode: 'array',
    } as PgQueryConfig);
    for (const [id, hash, deleted, pruned, locked] of rows)
      existing.set(id, { id, data_hash: hash, deleted, pruned, locked, payload: null });
    return existing;
  }

  private async upsertChunk(
    tx: Tx,
    scope: RecordScope,
    model: string,
    chunk: Incoming[],
    existing: Map<string, Existing>,
    runId: string,
    op: 'save' | 'update',
    hashed: Hashed[] | undefined,
  ): Promise<ChunkOutcome> {
    const { counts, writes } = this.classify(chunk, existing, op, hashed);
    if (writes.length === 0) return counts;
    for (const w of writes)
      if (w.touch && (!counts.maxTouched || w.id > counts.maxTouched)) counts.maxTouched = w.id;

    await tx.query({
      name: 'records_upsert',
      text: SQL.upsert,
      values: [
        scope.environmentId,
        scope.providerConfigKey,
        scope.connectionId,
        model,
        runId,
        plainTextArray(writes.map((w) => w.id)),
        binaryTextArray(writes.map((w) => w.externalId)),
        binaryTextArray(writes.map((w) => w.hash)),
        binaryByteaArray(writes.map((w) => w.payload)),
        writes.map((w) => w.size),
        writes.map((w) => w.touch),
      ],
    });
    return counts;
  }

  /** Sorts a chunk of a save or update into what it changes (sealed, ready to write) and what it counts. */
  private classify(
    chunk: Incoming[],
    existing: Map<string, Existing>,
    op: 'save' | 'update',
    hashed: Hashed[] | undefined,
  ): { counts: ChunkOutcome; writes: Write[] } {
    const counts = noChange();
    const writes: Write[] = [];
    // One data key for the chunk's payloads (each still bound to its row): half the AES work per record.
    let key: SharedDataKey | undefined;
    const toWrite = (incoming: Incoming, json: string, hash: string, touch: boolean): Write => ({
      id: incoming.id,
      externalId: incoming.externalId,
      hash,
      payload: (key ??= this.cipher.sharedKey()).sealBytes(json, payloadAad(incoming.id)),
      size: Buffer.byteLength(json),
      touch,
    });
    for (let i = 0; i < chunk.length; i++) {
      const incoming = chunk[i]!;
      const row = existing.get(incoming.id);
      if (op === 'update') {
        // batchUpdate changes records that exist (and are not deleted): the update is merged into them.
        if (!row || row.deleted || row.locked) {
          counts.unchanged++;
          continue;
        }
        const old = row.payload ? this.cipher.decryptJson<unknown>(row.payload, payloadAad(row.id)) : {};
        const json = JSON.stringify(mergeRecord(old, incoming.record));
        const hash = dataHash(json);
        if (hash === row.data_hash && !row.pruned) {
          counts.unchanged++;
          continue;
        }
        counts.updated++;
        writes.push(toWrite(incoming, json, hash, true));
        continue;
      }
      const { json, hash } = hashed?.[i] ?? hashRecord(incoming);
      if (!row) {
        counts.added++;
        writes.push(toWrite(incoming, json, hash, true));
      } else if (row.locked) {
        counts.unchanged++;
      } else if (row.deleted) {
        // Nango counts a record that comes back as added.
        counts.added++;
        writes.push(toWrite(incoming, json, hash, true));
      } else if (row.data_hash !== hash) {
        counts.updated++;
        writes.push(toWrite(incoming, json, hash, true));
      } else if (row.pruned) {
        // Same record again after its payload was pruned: the payload comes back, nothing changed for the customer.
        counts.unchanged++;
        writes.push(toWrite(incoming, json, hash, false));
      } else {
        counts.unchanged++;
      }
    }
    return { counts, writes };
  }

  private async deleteChunk(
    tx: Tx,
    chunk: Incoming[],
    existing: Map<string, Existing>,
    runId: string,
  ): Promise<ChunkOutcome> {
    const counts = noChange();
    const ids: string[] = [];
    const deletedAt: (string | null)[] = [];
    for (const incoming of chunk) {
      const row = existing.get(incoming.id);
      // Deleting what does not exist or is already deleted changes nothing (and is not counted).
      if (!row || row.deleted || row.locked) {
        counts.unchanged++;
        continue;
      }
      counts.deleted++;
      ids.push(incoming.id);
      if (!counts.maxTouched || incoming.id > counts.maxTouched) counts.maxTouched = incoming.id;
      const given = incoming.record.deletedAt;
      const at = typeof given === 'string' || typeof given === 'number' ? new Date(given) : undefined;
      deletedAt.push(at && !Number.isNaN(at.getTime()) ? at.toISOString() : null);
    }
    if (ids.length === 0) return counts;
    await tx.query({ name: 'records_delete', text: SQL.delete, values: [runId, ids, deletedAt] });
    return counts;
  }
}
