import { createPgPool, type PgPool } from '@switchboard/db';
import { testInfrastructure } from '@switchboard/testing';
import { binaryTextArray } from './pg-binary-array';

/** The binary `text[]` parameter reads back in Postgres as the strings it was made of. */
describe('binaryTextArray (Postgres)', () => {
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
});
