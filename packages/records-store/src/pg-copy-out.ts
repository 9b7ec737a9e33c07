import type { PgPoolClient } from '@switchboard/db';

/**
 * `COPY (<query>) TO STDOUT (FORMAT binary)` on a node-postgres client, handing each row to `onRow` as
 * Postgres sent it (`CopyRow`: read its fields in the query's column order). node-postgres decodes every
 * field of an ordinary result as UTF-8 text, so a bytea column comes either as hex (twice its bytes, and
 * decoding it cost about as much as the base64url it replaces, bench/records) or, with
 * `binary: true`, corrupted (arbitrary bytes through a UTF-8 decoder); COPY's data messages are the only
 * bytes it hands over untouched. A COPY takes no parameters: callers splice values in as escaped literals.
 *
 * Rows are read as they arrive, from node-postgres's receive buffer (valid only during `onRow`: copy what
 * must outlive it): Postgres sends each row of a COPY TO in a message of its own, the header with the first.
 * Collecting the whole result first cost more than it saved (a few MB of growing buffers per page, and the
 * collections their external memory brought on). A throw from `onRow` ends the reading and rejects, once
 * Postgres is done with the statement.
 */
export function copyOut(
  client: Pick<PgPoolClient, 'query'>,
  query: string,
  fields: number,
  onRow: (row: CopyRow) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const row = new CopyRow(fields);
    let header = true;
    let failure: unknown;
    // A Submittable (node-postgres calls these hooks on the active query); nothing else reaches a COPY TO.
    const submittable = {
      submit: (connection: { query: (text: string) => void }) => connection.query(query),
      handleCopyData: (message: { chunk: Buffer }) => {
        if (failure !== undefined) return;
        try {
          if (row.start(message.chunk, header)) onRow(row);
          header = false;
        } catch (error) {
          failure = error;
        }
      },
      handleCommandComplete: () => undefined,
      // As node-postgres's own queries: an error (from Postgres or a dead socket) settles the query at once,
      // and the ReadyForQuery that follows one from Postgres is no longer handed to it.
      handleError: reject,
      handleReadyForQuery: () => (failure === undefined ? resolve() : reject(failure)),
    };
    void (client.query as unknown as (s: typeof submittable) => unknown)(submittable);
  });
}

/** `PGCOPY\n\377\r\n\0`: the binary COPY signature, then flags (int32) and a header extension's length (int32). */
const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');

/**
 * One row of a binary COPY, its fields read in order (text as UTF-8, int4 as a big-endian int32, bool as
 * one byte, bytea as its bytes; Postgres's `*send` formats). Nothing is allocated but the values asked
 * for: a bytea is a view of the message.
 */
export class CopyRow {
  private data: Buffer = Buffer.alloc(0);
  private at = 0;

  constructor(private readonly fields: number) {}

  /** Starts reading a message (the first one begins with the header); false for the trailer. */
  start(data: Buffer, header: boolean): boolean {
    this.data = data;
    this.at = 0;
    if (header) {
      if (data.length < SIGNATURE.length + 8 || !data.subarray(0, SIGNATURE.length).equals(SIGNATURE))
        throw new Error('not a binary COPY');
      this.at = SIGNATURE.length + 8 + data.readInt32BE(SIGNATURE.length + 4);
      if (this.at === data.length) return false; // the header alone
    }
    const count = data.readInt16BE(this.at);
    this.at += 2;
    if (count === -1) return false;
    if (count !== this.fields) throw new Error(`binary COPY row of ${count} fields, expected ${this.fields}`);
    return true;
  }

  text(): string | null {
    const length = this.field();
    return length < 0 ? null : this.data.toString('utf8', this.at - length, this.at);
  }

  int4(): number | null {
    const length = this.field();
    return length < 0 ? null : this.data.readInt32BE(this.at - length);
  }

  bool(): boolean | null {
    const length = this.field();
    return length < 0 ? null : this.data[this.at - 1] !== 0;
  }

  bytes(): Buffer | null {
    const length = this.field();
    return length < 0 ? null : this.data.subarray(this.at - length, this.at);
  }

  /** Moves past the next field, answering its length (-1 for NULL). */
  private field(): number {
    const length = this.data.readInt32BE(this.at);
    this.at += 4 + Math.max(length, 0);
    if (this.at > this.data.length) throw new Error('binary COPY row cut short');
    return length;
  }
}
