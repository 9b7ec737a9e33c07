import { Inject, Injectable } from '@nestjs/common';
import type { ConnectionError, EndUser } from '@switchboard/contracts';
import { Prisma, type ConnectionModel, type VaultDb } from '@switchboard/db';
import { VAULT_DB } from '../database/database.module';

export type ConnectionRow = ConnectionModel;
type Tx = Prisma.TransactionClient;

/** `now()` would be the transaction's start; leases need the wall clock, in UTC like Prisma's own writes. */
const NOW = Prisma.raw(`(clock_timestamp() AT TIME ZONE 'UTC')`);

/** Every column under its Prisma field name, so raw queries return the same shape as the ORM. */
const COLUMNS = Prisma.raw(
  [
    'id',
    'environment_id AS "environmentId"',
    'connection_id AS "connectionId"',
    'provider_config_key AS "providerConfigKey"',
    'provider',
    'credentials',
    'credentials_expires_at AS "credentialsExpiresAt"',
    'connection_config AS "connectionConfig"',
    'metadata',
    'tags',
    'end_user AS "endUser"',
    'webhook_url_override AS "webhookUrlOverride"',
    'errors',
    'refresh_lease_owner AS "refreshLeaseOwner"',
    'refresh_lease_until AS "refreshLeaseUntil"',
    'last_refresh_success AS "lastRefreshSuccess"',
    'last_refresh_failure AS "lastRefreshFailure"',
    'refresh_failures AS "refreshFailures"',
    'last_refresh_error AS "lastRefreshError"',
    'created_at AS "createdAt"',
    'updated_at AS "updatedAt"',
    'last_fetched_at AS "lastFetchedAt"',
  ].join(', '),
);

const json = (value: unknown) => Prisma.sql`${JSON.stringify(value)}::jsonb`;

/** The connection's `errors` without any of the given type. */
const errorsWithout = (type: 'auth' | 'sync') =>
  Prisma.sql`COALESCE((SELECT jsonb_agg(e) FROM jsonb_array_elements(errors) e WHERE e->>'type' <> ${type}), '[]'::jsonb)`;

export interface ConnectionKey {
  environmentId: number;
  providerConfigKey: string;
  connectionId: string;
}

export interface ListFilters {
  connectionId?: string | undefined;
  search?: string | undefined;
  endUserId?: string | undefined;
  endUserOrganizationId?: string | undefined;
  integrationIds?: string[] | undefined;
  tags?: Record<string, string> | undefined;
  limit: number;
  page: number;
}

export interface ConnectionWrite {
  provider: string;
  /** Builds the ciphertext once the row id is known (the id is the associated data). */
  sealCredentials: (rowId: number) => string;
  credentialsExpiresAt: Date | null;
  connectionConfig: Record<string, unknown>;
  /** undefined = keep (null on creation); null = clear. */
  metadata?: Record<string, unknown> | null | undefined;
  /** undefined = keep ({} on creation). */
  tags?: Record<string, string> | undefined;
  /** undefined = keep. */
  endUser?: EndUser | null | undefined;
  /** undefined = keep; null = clear. */
  webhookUrlOverride?: string | null | undefined;
}

export interface OutboxInsert {
  eventId: string;
  subject: string;
  payload: unknown;
}

@Injectable()
export class ConnectionsRepository {
  constructor(@Inject(VAULT_DB) private readonly db: VaultDb) {}

  findByKey(key: ConnectionKey): Promise<ConnectionRow | null> {
    return this.db.connection.findUnique({
      where: {
        environmentId_providerConfigKey_connectionId: {
          environmentId: key.environmentId,
          providerConfigKey: key.providerConfigKey,
          connectionId: key.connectionId,
        },
      },
    });
  }

  findById(id: number): Promise<ConnectionRow | null> {
    return this.db.connection.findUnique({ where: { id } });
  }

  /** Newest first, as Nango orders them; `tags` must all match (JSONB containment). */
  async list(environmentId: number, f: ListFilters): Promise<ConnectionRow[]> {
    const where: Prisma.Sql[] = [Prisma.sql`environment_id = ${environmentId}`];
    if (f.connectionId !== undefined) where.push(Prisma.sql`connection_id = ${f.connectionId}`);
    if (f.integrationIds?.length)
      where.push(Prisma.sql`provider_config_key = ANY(${f.integrationIds}::text[])`);
    if (f.endUserId !== undefined) where.push(Prisma.sql`end_user->>'id' = ${f.endUserId}`);
    if (f.endUserOrganizationId !== undefined)
      where.push(Prisma.sql`end_user->'organization'->>'id' = ${f.endUserOrganizationId}`);
    if (f.tags && Object.keys(f.tags).length > 0) where.push(Prisma.sql`tags @> ${json(f.tags)}`);
    if (f.search !== undefined) {
      const pattern = `%${f.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      where.push(
        Prisma.sql`(connection_id ILIKE ${pattern} OR end_user->>'display_name' ILIKE ${pattern} OR end_user->>'email' ILIKE ${pattern})`,
      );
    }
    return this.db.$queryRaw<ConnectionRow[]>`
      SELECT ${COLUMNS} FROM vault.connections
      WHERE ${Prisma.join(where, ' AND ')}
      ORDER BY created_at DESC, id DESC
      LIMIT ${f.limit} OFFSET ${f.limit * f.page}`;
  }

  /** Every read records when it happened; skipped when it did a moment ago, so a burst of reads is one write. */
  async touchFetched(id: number): Promise<void> {
    await this.db.$executeRaw`
      UPDATE vault.connections SET last_fetched_at = ${NOW}
      WHERE id = ${id} AND (last_fetched_at IS NULL OR last_fetched_at < ${NOW} - interval '1 second')`;
  }

  /**
   * Creates or overrides a connection (and queues its event) in one transaction. The ciphertext is bound
   * to the row id, so a new row takes its id from the sequence before it is written.
   */
  async upsert(
    key: ConnectionKey,
    write: ConnectionWrite,
    event: (row: ConnectionRow, operation: 'creation' | 'override') => OutboxInsert,
  ): Promise<{ row: ConnectionRow; operation: 'creation' | 'override' }> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.db.$transaction(async (tx) => {
          const [existing] = await tx.$queryRaw<{ id: number }[]>`
            SELECT id FROM vault.connections
            WHERE environment_id = ${key.environmentId} AND provider_config_key = ${key.providerConfigKey} AND connection_id = ${key.connectionId}
            FOR UPDATE`;
          let row: ConnectionRow;
          let operation: 'creation' | 'override';
          if (existing) {
            operation = 'override';
            row = await this.overrideRow(tx, existing.id, write);
          } else {
            operation = 'creation';
            row = await this.createRow(tx, key, write);
          }
          await this.insertOutbox(tx, event(row, operation));
          return { row, operation };
        });
      } catch (error) {
        // Two first-time stores of the same connection raced; the loser now finds the row and overrides it.
        if (attempt < 2 && (error as { code?: string }).code === 'P2002') continue;
        throw error;
      }
    }
  }

  /** Overrides a stored connection: new credentials clear its refresh failures and its auth error. */
  private async overrideRow(tx: Tx, id: number, write: ConnectionWrite): Promise<ConnectionRow> {
    const row = await tx.connection.update({
      where: { id },
      data: {
        provider: write.provider,
        credentials: write.sealCredentials(id),
        credentialsExpiresAt: write.credentialsExpiresAt,
        connectionConfig: write.connectionConfig as Prisma.InputJsonObject,
        ...(write.metadata !== undefined
          ? {
              metadata: write.metadata === null ? Prisma.DbNull : (write.metadata as Prisma.InputJsonObject),
            }
          : {}),
        ...(write.tags !== undefined ? { tags: write.tags } : {}),
        ...(write.endUser !== undefined
          ? {
              endUser:
                write.endUser === null ? Prisma.DbNull : (write.endUser as unknown as Prisma.InputJsonObject),
            }
          : {}),
        ...(write.webhookUrlOverride !== undefined ? { webhookUrlOverride: write.webhookUrlOverride } : {}),
        // New credentials from the end user: earlier refresh failures no longer apply.
        refreshFailures: 0,
        lastRefreshFailure: null,
        lastRefreshSuccess: null,
        lastRefreshError: Prisma.DbNull,
        refreshLeaseOwner: null,
        refreshLeaseUntil: null,
      },
    });
    await tx.$executeRaw`UPDATE vault.connections SET errors = ${errorsWithout('auth')} WHERE id = ${id}`;
    row.errors = ((row.errors as ConnectionError[]) ?? []).filter((e) => e.type !== 'auth');
    return row;
  }

  /** A new connection row, its id taken from the sequence first so its ciphertext can be bound to it. */
  private async createRow(tx: Tx, key: ConnectionKey, write: ConnectionWrite): Promise<ConnectionRow> {
    const [{ id }] = (await tx.$queryRaw<{ id: number }[]>`
      SELECT nextval(pg_get_serial_sequence('vault.connections', 'id'))::int AS id`) as [{ id: number }];
    return tx.connection.create({
      data: {
        id,
        environmentId: key.environmentId,
        providerConfigKey: key.providerConfigKey,
        connectionId: key.connectionId,
        provider: write.provider,
        credentials: write.sealCredentials(id),
        credentialsExpiresAt: write.credentialsExpiresAt,
        connectionConfig: write.connectionConfig as Prisma.InputJsonObject,
        metadata: write.metadata ? (write.metadata as Prisma.InputJsonObject) : Prisma.DbNull,
        tags: write.tags ?? {},
        endUser: write.endUser ? (write.endUser as unknown as Prisma.InputJsonObject) : Prisma.DbNull,
        webhookUrlOverride: write.webhookUrlOverride ?? null,
      },
    });
  }

  async patch(
    key: ConnectionKey,
    patch: { tags?: Record<string, string>; endUser?: EndUser; webhookUrlOverride?: string | null },
  ): Promise<boolean> {
    const { count } = await this.db.connection.updateMany({
      where: {
        environmentId: key.environmentId,
        providerConfigKey: key.providerConfigKey,
        connectionId: key.connectionId,
      },
      data: {
        ...(patch.tags !== undefined ? { tags: patch.tags } : {}),
        ...(patch.endUser !== undefined
          ? { endUser: patch.endUser as unknown as Prisma.InputJsonObject }
          : {}),
        ...(patch.webhookUrlOverride !== undefined ? { webhookUrlOverride: patch.webhookUrlOverride } : {}),
      },
    });
    return count === 1;
  }

  /** Deletes a connection and, in the same transaction, stores the event announcing it (when it existed). */
  async delete(key: ConnectionKey, event: OutboxInsert): Promise<boolean> {
    return this.db.$transaction(async (tx) => {
      const { count } = await tx.connection.deleteMany({
        where: {
          environmentId: key.environmentId,
          providerConfigKey: key.providerConfigKey,
          connectionId: key.connectionId,
        },
      });
      if (count === 1) await this.insertOutbox(tx, event);
      return count === 1;
    });
  }

  /**
   * Replaces (`replace`) or shallow-merges metadata of several connections, all or nothing: the rows are
   * locked first, and when any is missing nothing is written. Returns the ids that do not exist.
   */
  async writeMetadata(
    environmentId: number,
    providerConfigKey: string,
    connectionIds: string[],
    metadata: Record<string, unknown>,
    mode: 'replace' | 'merge',
  ): Promise<string[]> {
    const unique = [...new Set(connectionIds)];
    return this.db.$transaction(async (tx) => {
      const found = await tx.$queryRaw<{ connection_id: string }[]>`
        SELECT connection_id FROM vault.connections
        WHERE environment_id = ${environmentId} AND provider_config_key = ${providerConfigKey} AND connection_id = ANY(${unique}::text[])
        ORDER BY id FOR UPDATE`;
      const present = new Set(found.map((r) => r.connection_id));
      const missing = unique.filter((id) => !present.has(id));
      if (missing.length > 0) return missing;
      const value =
        mode === 'replace'
          ? json(metadata)
          : Prisma.sql`COALESCE(metadata, '{}'::jsonb) || ${json(metadata)}`;
      await tx.$executeRaw`
        UPDATE vault.connections SET metadata = ${value}, updated_at = ${NOW}
        WHERE environment_id = ${environmentId} AND provider_config_key = ${providerConfigKey} AND connection_id = ANY(${unique}::text[])`;
      return [];
    });
  }

  /**
   * Connections whose `connection_id`, `connection_config.<path>` or `metadata.<path>` equals a value.
   * A dotted path matches a nested value or a flat key holding the dots, because token-response
   * metadata such as Slack's `team.id` is stored under the flat key `"team.id"` (as Nango stores it).
   */
  match(
    environmentId: number,
    providerConfigKey: string,
    field: string,
    value: string,
  ): Promise<ConnectionRow[]> {
    const [root, ...path] = field.split('.');
    const column = root === 'connection_config' ? Prisma.sql`connection_config` : Prisma.sql`metadata`;
    const condition =
      root === 'connection_id'
        ? Prisma.sql`connection_id = ${value}`
        : Prisma.sql`(${column} ->> ${path.join('.')} = ${value} OR ${column} #>> ${path}::text[] = ${value})`;
    return this.db.$queryRaw<ConnectionRow[]>`
      SELECT ${COLUMNS} FROM vault.connections
      WHERE environment_id = ${environmentId} AND provider_config_key = ${providerConfigKey} AND ${condition}
      ORDER BY id LIMIT 1000`;
  }

  // ---- refresh coordination ----

  /**
   * Takes the connection's refresh lease when nobody holds a live one: one atomic conditional UPDATE,
   * so exactly one replica wins however many try at once. Returns the row as of the win, or null.
   */
  async tryAcquireLease(id: number, owner: string, leaseMs: number): Promise<ConnectionRow | null> {
    const rows = await this.db.$queryRaw<ConnectionRow[]>`
      UPDATE vault.connections
      SET refresh_lease_owner = ${owner}, refresh_lease_until = ${NOW} + make_interval(secs => ${leaseMs / 1000})
      WHERE id = ${id} AND (refresh_lease_until IS NULL OR refresh_lease_until < ${NOW})
      RETURNING ${COLUMNS}`;
    return rows[0] ?? null;
  }

  async releaseLease(id: number, owner: string): Promise<void> {
    await this.db.$executeRaw`
      UPDATE vault.connections SET refresh_lease_owner = NULL, refresh_lease_until = NULL
      WHERE id = ${id} AND refresh_lease_owner = ${owner}`;
  }

  /**
   * Stores refreshed credentials if the row still holds the ciphertext they were refreshed from
   * (compare-and-set: a concurrent override or rewrap is never overwritten blindly), clears the failure
   * state and the auth errors, and gives the lease back if we still hold it.
   */
  async saveRefreshed(
    id: number,
    owner: string,
    previousBlob: string,
    nextBlob: string,
    expiresAt: Date | null,
    connectionConfig: Record<string, unknown>,
  ): Promise<ConnectionRow | null> {
    const rows = await this.db.$queryRaw<ConnectionRow[]>`
      UPDATE vault.connections SET
        credentials = ${nextBlob},
        credentials_expires_at = ${expiresAt},
        connection_config = ${json(connectionConfig)},
        refresh_lease_owner = CASE WHEN refresh_lease_owner = ${owner} THEN NULL ELSE refresh_lease_owner END,
        refresh_lease_until = CASE WHEN refresh_lease_owner = ${owner} THEN NULL ELSE refresh_lease_until END,
        last_refresh_success = ${NOW},
        last_refresh_failure = NULL,
        last_refresh_error = NULL,
        refresh_failures = 0,
        errors = ${errorsWithout('auth')},
        updated_at = ${NOW}
      WHERE id = ${id} AND credentials = ${previousBlob}
      RETURNING ${COLUMNS}`;
    return rows[0] ?? null;
  }

  /**
   * Records a failed refresh and queues its auth event in one transaction: the failure is what later
   * callers back off on, and the event is published exactly once per failed provider call.
   */
  async recordRefreshFailure(
    id: number,
    owner: string,
    failure: { code: string; message: string },
    logId: string,
    event: OutboxInsert,
  ): Promise<ConnectionRow | null> {
    return this.db.$transaction(async (tx) => {
      const rows = await tx.$queryRaw<ConnectionRow[]>`
        UPDATE vault.connections SET
          refresh_lease_owner = CASE WHEN refresh_lease_owner = ${owner} THEN NULL ELSE refresh_lease_owner END,
          refresh_lease_until = CASE WHEN refresh_lease_owner = ${owner} THEN NULL ELSE refresh_lease_until END,
          last_refresh_failure = ${NOW},
          last_refresh_error = ${json(failure)},
          refresh_failures = refresh_failures + 1,
          errors = ${errorsWithout('auth')} || ${json([{ type: 'auth', log_id: logId }])},
          updated_at = ${NOW}
        WHERE id = ${id}
        RETURNING ${COLUMNS}`;
      if (rows[0]) await this.insertOutbox(tx, event);
      return rows[0] ?? null;
    });
  }

  // ---- rotation ----

  /** Rows after `afterId` whose credentials are not wrapped with `version`, in id order (optionally one environment's). */
  rowsToRewrap(
    afterId: number,
    version: number,
    limit: number,
    environmentId?: number,
  ): Promise<{ id: number; credentials: string }[]> {
    const prefix = `sb1.${version}.%`;
    const scope =
      environmentId === undefined ? Prisma.empty : Prisma.sql`AND environment_id = ${environmentId}`;
    return this.db.$queryRaw<{ id: number; credentials: string }[]>`
      SELECT id, credentials FROM vault.connections
      WHERE id > ${afterId} AND credentials IS NOT NULL AND credentials NOT LIKE ${prefix} ${scope}
      ORDER BY id LIMIT ${limit}`;
  }

  /** Compare-and-set per row, in one statement: a row written since it was read keeps the newer value. */
  async swapCiphertexts(swaps: { id: number; from: string; to: string }[]): Promise<number[]> {
    if (swaps.length === 0) return [];
    const rows = await this.db.$queryRaw<{ id: number }[]>`
      UPDATE vault.connections c SET credentials = v.next
      FROM unnest(${swaps.map((s) => s.id)}::int[], ${swaps.map((s) => s.from)}::text[], ${swaps.map((s) => s.to)}::text[]) AS v(id, prev, next)
      WHERE c.id = v.id AND c.credentials = v.prev
      RETURNING c.id`;
    return rows.map((r) => r.id);
  }

  async countNotOnVersion(version: number, environmentId?: number): Promise<number> {
    const scope =
      environmentId === undefined ? Prisma.empty : Prisma.sql`AND environment_id = ${environmentId}`;
    const [row] = await this.db.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM vault.connections WHERE credentials IS NOT NULL AND credentials NOT LIKE ${`sb1.${version}.%`} ${scope}`;
    return row?.n ?? 0;
  }

  async credentialsOf(id: number): Promise<string | null | undefined> {
    const row = await this.db.connection.findUnique({ where: { id }, select: { credentials: true } });
    return row === null ? undefined : row.credentials;
  }

  // ---- integrations ----

  countForIntegration(environmentId: number, providerConfigKey: string): Promise<number> {
    return this.db.connection.count({ where: { environmentId, providerConfigKey } });
  }

  async idsForIntegration(
    environmentId: number,
    providerConfigKey: string,
    connectionId?: string,
  ): Promise<string[]> {
    const rows = await this.db.connection.findMany({
      where: { environmentId, providerConfigKey, ...(connectionId !== undefined ? { connectionId } : {}) },
      select: { connectionId: true },
      orderBy: { id: 'asc' },
    });
    return rows.map((r) => r.connectionId);
  }

  async deleteForIntegration(environmentId: number, providerConfigKey: string): Promise<number> {
    const { count } = await this.db.connection.deleteMany({ where: { environmentId, providerConfigKey } });
    return count;
  }

  private async insertOutbox(tx: Tx, event: OutboxInsert): Promise<void> {
    await tx.outboxEvent.create({
      data: {
        eventId: event.eventId,
        subject: event.subject,
        payload: event.payload as Prisma.InputJsonObject,
      },
    });
  }
}
