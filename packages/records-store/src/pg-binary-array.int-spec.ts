import { createPgPool, type PgPool } from '@switchboard/db';
import { testInfrastructure } from '@switchboard/testing';
import { randomBytes } from 'node:crypto';
import { binaryByteaArray, binaryTextArray } from './pg-binary-array';
import { copyOut } from './pg-copy-out';

/** The binary array parameters read back in Postgres as the values they were made of; binary COPY reads back bytes. */
describe('binary arrays and binary COPY (Postgres)', () => {
  let pool: PgPool;

  beforeAll(async () => {
    pool = createPgPool((await testInfrastructure()).databaseUrl, { poolSize: 1 });
  });

  afterAll(async () => {
    await pool.end();
  });

  it('round-trips quotes, backslashes, braces, commas, multi-byte text, empty strings and long values', async () => {
    const values = ['a"b', 'c\\d', '{e,f}', 'NULL', '', 'é漢字🙂', "g'h", 'x'.repeat(100_000)];
    const { rows } = await pool.query<{ v: string[]; n: number }>(
      'SELECT $1::text[] AS v, cardinality($1::text[]) AS n',
      [binaryTextArray(values)],
    );
    expect(rows[0]!.n).toBe(values.length);
    expect(rows[0]!.v).toEqual(values);
  });

  it('sends an empty array', async () => {
    const { rows } = await pool.query<{ n: number }>('SELECT cardinality($1::text[]) AS n', [
      binaryTextArray([]),
    ]);
    expect(rows[0]!.n).toBe(0);
  });

  it('round-trips bytes (NUL, high bytes, empty) through a bytea[] parameter and back through binary COPY', async () => {
    const values = [Buffer.from([0, 0xff, 0x5c, 0x78, 0]), Buffer.alloc(0), randomBytes(200_000)];
    // Compared as hex: jest's deep equality walks a Buffer byte by byte, seconds for 200 KB on a busy host.
    const hex = (bytes: unknown) => (Buffer.isBuffer(bytes) ? bytes.toString('hex') : bytes);
    const { rows } = await pool.query<{ v: Buffer[] }>('SELECT $1::bytea[] AS v', [binaryByteaArray(values)]);
    expect(rows[0]!.v.map(hex)).toEqual(values.map(hex));

    const client = await pool.connect();
    try {
      await client.query('CREATE TEMP TABLE copied (i int, v bytea, t text, n text)');
      await client.query(
        `INSERT INTO copied SELECT i, v, 'é' || i::text, NULL FROM unnest($1::bytea[]) WITH ORDINALITY AS u(v, i)`,
        [binaryByteaArray(values)],
      );
      const read: unknown[][] = [];
      const copy = (query: string, onRow: Parameters<typeof copyOut>[3]) => copyOut(client, query, 4, onRow);
      await copy('COPY (SELECT * FROM copied ORDER BY i) TO STDOUT (FORMAT binary)', (row) =>
        // Copied: the row's bytes are only valid during the call.
        read.push([row.int4(), Buffer.from(row.bytes()!), row.text(), row.text()]),
      );
      expect(read.map((row) => row.map(hex))).toEqual(
        values.map((v, i) => [i + 1, hex(v), `é${i + 1}`, null]),
      );
      // No rows: the header and the trailer alone.
      await copy('COPY (SELECT * FROM copied WHERE false) TO STDOUT (FORMAT binary)', () => {
        throw new Error('no row expected');
      });

      // A failing COPY rejects, and so does a throw while reading its rows; the connection goes on.
      await expect(copy('COPY (SELECT 1 / 0) TO STDOUT (FORMAT binary)', () => undefined)).rejects.toThrow(
        /division by zero/,
      );
      await expect(
        copy('COPY (SELECT * FROM copied) TO STDOUT (FORMAT binary)', () => {
          throw new Error('refused');
        }),
      ).rejects.toThrow('refused');
      expect((await client.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one).toBe(1);
    } finally {
      client.release(true);
    }
  });
});
