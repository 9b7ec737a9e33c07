import { randomInt, randomUUID } from 'node:crypto';
import { MasterKeyring } from '@switchboard/crypto';
import { createPgPool, createPrismaClient, type PgPool, type PrismaClient } from '@switchboard/db';
import type { RecordScope } from './record-keys';
import { RecordsStore } from './records.store';
import type { ListQuery, StoredRecord } from './records.types';

/**
 * A records store on a real Postgres for integration tests, with a fresh master key and an environment
 * of its own (a random id keeps its rows apart from every other test's). `open` in `beforeAll`,
 * `close` in `afterAll`: it removes the environment's records, counts and syncs, then its connections.
 */
export class RecordsTestWorld {
  readonly environmentId = randomInt(1_000_000, 2_000_000_000);
  db!: PrismaClient;
  pool!: PgPool;
  store!: RecordsStore;
  private scopes = 0;

  async open(databaseUrl: string, poolSize: number): Promise<this> {
    this.db = createPrismaClient(databaseUrl, { poolSize });
    this.pool = createPgPool(databaseUrl, { poolSize });
    this.store = new RecordsStore(this.pool, new MasterKeyring(`1:${MasterKeyring.generateKeyMaterial()}`));
    return this;
  }

  async close(): Promise<void> {
    const environmentId = this.environmentId;
    await this.db.$executeRaw`DELETE FROM orchestrator.records WHERE environment_id = ${environmentId}`;
    await this.db.$executeRaw`DELETE FROM orchestrator.record_counts WHERE environment_id = ${environmentId}`;
    await this.db.$executeRaw`DELETE FROM orchestrator.syncs WHERE environment_id = ${environmentId}`;
    await this.db.$disconnect();
    await this.pool.end();
  }

  /** A connection of its own in this world's environment. */
  readonly newScope = (): RecordScope => ({
    environmentId: this.environmentId,
    providerConfigKey: 'fake-crm',
    connectionId: `conn-${++this.scopes}-${randomUUID()}`,
  });

  /** Records with the ids `from` up to (not including) `to`, each named after its id. */
  readonly items = (from: number, to: number, extra: Record<string, unknown> = {}) =>
    Array.from({ length: to - from }, (_, i) => ({ id: from + i, name: `item ${from + i}`, ...extra }));

  /** Every record of a model in a scope (up to 10,000). */
  readonly all = async (
    scope: RecordScope,
    model: string,
    query: Partial<ListQuery> = {},
  ): Promise<StoredRecord[]> => (await this.store.list(scope, model, { limit: 10_000, ...query })).records;
}
