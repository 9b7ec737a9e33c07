import type { PgPool } from '@switchboard/db';
import type { RecordScope } from './record-keys';
import { SQL, modelLockKey } from './records.sql';
import type { Tx, TxClient } from './records.types';

/** What a transaction's work may answer: a statement to send with COMMIT, and what to do with its rows. */
export interface CommitWith {
  commitWith: string;
  committed: (rows: unknown[]) => void;
}

/**
 * BEGIN … COMMIT on one pooled connection; ROLLBACK (or, failing that, a dropped connection) on error.
 * `begin` is a statement sent with BEGIN, and `work` may answer one to send with COMMIT: each pair is
 * one simple-protocol query, one round trip instead of two (a batch's round trips were a visible
 * share of its time). A failing statement in such a pair stops the rest (COMMIT is not run): ROLLBACK.
 */
export async function transaction(
  pool: PgPool,
  work: (tx: TxClient) => Promise<void | CommitWith>,
  begin?: (tx: TxClient) => string,
): Promise<void> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query(begin ? `BEGIN; ${begin(client)}` : 'BEGIN');
    const last = await work(client);
    if (last) {
      const results = (await client.query(`${last.commitWith}; COMMIT`)) as unknown as {
        rows: unknown[];
      }[];
      last.committed(results[0]!.rows);
    } else {
      await client.query('COMMIT');
    }
  } catch (error) {
    await client.query('ROLLBACK').catch((rollback: Error) => (broken = rollback));
    throw error;
  } finally {
    client.release(broken);
  }
}

/** Takes the (connection, model)'s advisory lock until the transaction ends: its writers take turns. */
export async function lockModel(tx: Tx, scope: RecordScope, model: string): Promise<void> {
  await tx.query({ name: 'records_lock', text: SQL.lock, values: [modelLockKey(scope, model)] });
}
