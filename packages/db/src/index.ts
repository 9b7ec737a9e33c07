import { PrismaPg } from '@prisma/adapter-pg';
import { Pool } from 'pg';
import { PrismaClient } from './generated/prisma/client';

export { Prisma, PrismaClient } from './generated/prisma/client';
export type * from './generated/prisma/models';

/** One client per process, over node-postgres (Prisma 7 needs no query-engine binary with an adapter). */
export function createPrismaClient(databaseUrl: string, options: { poolSize?: number } = {}): PrismaClient {
  return new PrismaClient({
    adapter: new PrismaPg({ connectionString: databaseUrl, max: options.poolSize ?? 10 }),
  });
}

type Common = '$transaction' | '$queryRaw' | '$executeRaw' | '$disconnect' | '$connect';

/** What auth-connect may touch: the `auth` schema only. */
export type AuthDb = Pick<
  PrismaClient,
  | Common
  | 'account'
  | 'environment'
  | 'apiKey'
  | 'integration'
  | 'environmentVariable'
  | 'consoleUser'
  | 'consoleSession'
  | 'consoleAuditEvent'
>;

/** What connections-vault may touch: the `vault` schema only. */
export type VaultDb = Pick<PrismaClient, Common | 'connection' | 'outboxEvent'>;

/** auth-connect's connect sessions, end users and pending redirect flows (the `auth` schema too). */
export type ConnectDb = Pick<
  PrismaClient,
  Common | 'integration' | 'environment' | 'connectSession' | 'endUser' | 'sessionConnection' | 'oAuthState'
>;

/** What webhook-relay may touch: the `relay` schema only. */
export type RelayDb = Pick<
  PrismaClient,
  Common | 'webhookSettings' | 'webhookDisabledEndpoint' | 'webhookDelivery' | 'webhookAttempt'
>;

/** What sync-orchestrator may touch: the `orchestrator` schema only. */
export type OrchestratorDb = Pick<
  PrismaClient,
  | Common
  | 'deployedFunction'
  | 'functionVersion'
  | 'invocation'
  | 'invocationLog'
  | 'functionCheckpoint'
  | 'functionLock'
  | 'sync'
  | 'syncRun'
>;

export type { Pool as PgPool, PoolClient as PgPoolClient, QueryConfig as PgQueryConfig } from 'pg';

/**
 * A plain node-postgres pool, for the few set-based hot statements where Prisma's driver-adapter layer
 * (parameters and rows serialised through its query engine) is most of the cost (the records store).
 */
export function createPgPool(databaseUrl: string, options: { poolSize?: number } = {}): Pool {
  const pool = new Pool({
    connectionString: databaseUrl,
    max: options.poolSize ?? 10,
    // As the Prisma transactions it replaces: waits at most 10 s for a connection, and a transaction
    // (e.g. stuck behind another's advisory lock) is cut after 120 s rather than holding its connection.
    connectionTimeoutMillis: 10_000,
    statement_timeout: 120_000,
    idle_in_transaction_session_timeout: 120_000,
  });
  // An idle connection Postgres dropped (restart, failover) is replaced on the next checkout; without a
  // listener its error would end the process.
  pool.on('error', () => undefined);
  return pool;
}
