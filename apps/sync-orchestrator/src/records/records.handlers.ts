import { Controller, Inject, type OnModuleInit } from '@nestjs/common';
import {
  MAX_DELETED_KEYS_REPLY,
  RECORDS_SUBJECTS,
  recordsListRequestSchema,
  recordsMessageBytes,
  toSyncIdentifier,
  type Caller,
  type ListRecordsResponse,
  type PruneRecordsResponse,
  type RecordsGetByIdsRequest,
  type RecordsListForRunRequest,
  type RecordsListReply,
  type RecordsPruneRequest,
  type RecordsDeleteUnseenRequest,
  type RecordsRunScopeRequest,
  type RecordsWriteReply,
  type RecordsWriteRequest,
  RECORDS_REQUESTS,
} from '@switchboard/contracts';
import { NATS_CONNECTION, NatsHandler, serveRaw, type RawAnswer } from '@switchboard/messaging';
import { RecordsStore, type RecordScope } from '@switchboard/records-store';
import type { NatsConnection } from 'nats';
import type { z } from 'zod';
import { KnownConnections } from '../connections/known-connections';
import { OrchestratorError } from '../sync-orchestrator.errors';
import { holdSyncRun, type SyncRunScope } from '../syncs/sync-run-fence';

const scopeOf = (r: { caller: Caller; providerConfigKey: string; connectionId: string }): RecordScope => ({
  environmentId: r.caller.environmentId,
  providerConfigKey: r.providerConfigKey,
  connectionId: r.connectionId,
});

/**
 * What a script's records write is for: its connection, and the variant its model key carries (`Model` or
 * `Model::variant`, read as a sync identifier is: the variant is everything after the first `::`).
 */
const runScopeOf = (r: {
  caller: Caller;
  providerConfigKey: string;
  connectionId: string;
  model: string;
}): SyncRunScope => ({ ...scopeOf(r), variant: toSyncIdentifier(r.model).variant });

/**
 * The records subjects: `GET /records` and `PATCH /records/prune` for the gateway, and the sync API of a
 * running script for functions-runtime (which scopes every call by its run request, never by the script).
 */
@Controller()
export class RecordsHandlers implements OnModuleInit {
  constructor(
    private readonly store: RecordsStore,
    private readonly connections: KnownConnections,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
  ) {}

  /** A reply's budget of records, from the largest message the server announced (read when it is sent). */
  private get messageBytes(): number {
    return recordsMessageBytes(this.nc.info?.max_payload);
  }

  /**
   * `GET /records` pages go out as raw replies (the records' JSON as bytes after a one-line envelope), not
   * through Nest's JSON transport, which escaped every quote of a 1 MB page into a JSON string and the
   * gateway parsed it back. Same queue group as the Nest handlers (the service's name).
   */
  onModuleInit(): void {
    serveRaw(this.nc, RECORDS_SUBJECTS.list, 'sync-orchestrator', recordsListRequestSchema, (request) =>
      this.list(request),
    );
  }

  async list(request: z.infer<typeof recordsListRequestSchema>): Promise<RawAnswer<RecordsListReply>> {
    // The connection check (a request to connections-vault) runs beside the page read instead of before it;
    // an unknown connection still answers unknown_connection, whatever the read gave.
    const connection = request.checkConnection ? this.requireConnection(request) : undefined;
    const reading = this.store.listJson(scopeOf(request), request.model, {
      limit: request.limit,
      ...(request.modifiedAfter ? { modifiedAfter: request.modifiedAfter } : {}),
      ...(request.filter ? { filter: request.filter } : {}),
      ...(request.cursor ? { cursor: request.cursor } : {}),
      ...(request.ids ? { externalIds: request.ids } : {}),
      // The gateway asks again from next_cursor until its page is full.
      maxBytes: this.messageBytes,
    });
    if (connection) {
      const [checked] = await Promise.allSettled([connection, reading]);
      if (checked.status === 'rejected') throw checked.reason;
    }
    const page = await reading;
    return { meta: { count: page.count, next_cursor: page.next_cursor }, body: page.recordsJson };
  }

  @NatsHandler(RECORDS_REQUESTS.prune)
  async prune(request: RecordsPruneRequest): Promise<PruneRecordsResponse> {
    await this.requireConnection(request);
    return this.store.prune(scopeOf(request), request.model, request.untilCursor, request.limit);
  }

  @NatsHandler(RECORDS_REQUESTS.write)
  async write(request: RecordsWriteRequest): Promise<RecordsWriteReply> {
    return this.store.write(scopeOf(request), request.model, request.records, request.op, request.runId, {
      ...(request.merging ? { merging: request.merging } : {}),
      // The script of a run that is over (a full resync cancelled it, ...) writes nothing.
      fence: (tx) => holdSyncRun(tx, request, runScopeOf(request)),
    });
  }

  @NatsHandler(RECORDS_REQUESTS.getByIds)
  async getByIds(request: RecordsGetByIdsRequest): Promise<ListRecordsResponse> {
    return this.store.list(scopeOf(request), request.model, {
      limit: request.ids.length,
      externalIds: request.ids,
      ...(request.cursor ? { cursor: request.cursor } : {}),
      maxBytes: this.messageBytes,
    });
  }

  /** `nango.listRecords` of a sync run: its own connection's records of one of its models, a page by cursor. */
  @NatsHandler(RECORDS_REQUESTS.listForRun)
  async listForRun(request: RecordsListForRunRequest): Promise<ListRecordsResponse> {
    return this.store.list(scopeOf(request), request.model, {
      limit: request.limit,
      ...(request.cursor ? { cursor: request.cursor } : {}),
      maxBytes: this.messageBytes,
    });
  }

  @NatsHandler(RECORDS_REQUESTS.trackDeletesStart)
  async trackDeletesStart(request: RecordsRunScopeRequest): Promise<null> {
    await this.store.openDeleteWindow(scopeOf(request), request.model, request.runId, (tx) =>
      holdSyncRun(tx, request, runScopeOf(request)),
    );
    return null;
  }

  @NatsHandler(RECORDS_REQUESTS.deleteUnseen)
  async deleteUnseen(
    request: RecordsDeleteUnseenRequest,
  ): Promise<{ deleted: number; deletedKeys: string[] }> {
    return this.store.deleteUnseenKeys(
      scopeOf(request),
      request.model,
      request.runId,
      MAX_DELETED_KEYS_REPLY,
      (tx) => holdSyncRun(tx, request, runScopeOf(request)),
      request.window === true,
    );
  }

  @NatsHandler(RECORDS_REQUESTS.lastCursor)
  async lastCursor(request: RecordsRunScopeRequest): Promise<{ cursor: string | null }> {
    return { cursor: await this.store.lastCursor(scopeOf(request), request.model) };
  }

  /**
   * Nango answers an unknown connection on the records routes with 400 `unknown_connection`. Checked for
   * every first page of a `GET /records`, so a found connection is kept a few seconds (`KnownConnections`).
   */
  private async requireConnection(request: {
    caller: Caller;
    providerConfigKey: string;
    connectionId: string;
  }): Promise<void> {
    if (
      !(await this.connections.exists(
        request.caller.environmentId,
        request.providerConfigKey,
        request.connectionId,
      ))
    ) {
      throw new OrchestratorError(
        'unknown_connection',
        'Provided ConnectionId and ProviderConfigKey does not match a valid connection',
      );
    }
  }
}
