import { Inject, Injectable } from '@nestjs/common';
import { BASE_VARIANT, CONNECTION_REQUESTS, type SyncCommandRequest } from '@switchboard/contracts';
import type { OrchestratorDb } from '@switchboard/db';
import { NatsRequester } from '@switchboard/messaging';
import { ORCHESTRATOR_DB } from '../database/database.module';
import { WITH_VERSION, type FunctionWithVersion } from '../functions/function-config';
import { OrchestratorError } from '../sync-orchestrator.errors';
import type { RecordScope } from './sync-records';

export type SyncRow = Awaited<ReturnType<OrchestratorDb['sync']['findMany']>>[number];

export const scopeOf = (row: SyncRow): RecordScope => ({
  environmentId: row.environmentId,
  providerConfigKey: row.providerConfigKey,
  connectionId: row.connectionId,
});

/** What the sync commands look up: the syncs a request names, the connection, the sync functions. */
@Injectable()
export class SyncLookups {
  constructor(
    @Inject(ORCHESTRATOR_DB) private readonly db: OrchestratorDb,
    private readonly nats: NatsRequester,
  ) {}

  /** The syncs a command names: all of the connection's (or integration's) when it names none. */
  async targets(request: SyncCommandRequest): Promise<SyncRow[]> {
    const { environmentId } = request.caller;
    if (request.connectionId !== undefined) {
      await this.requireConnection(environmentId, request.providerConfigKey, request.connectionId);
    }
    const rows = await this.db.sync.findMany({
      where: {
        environmentId,
        providerConfigKey: request.providerConfigKey,
        ...(request.connectionId !== undefined ? { connectionId: request.connectionId } : {}),
        ...(request.syncs.length > 0
          ? { OR: request.syncs.map((s) => ({ name: s.name, variant: s.variant })) }
          : {}),
      },
    });
    const missing = request.syncs.filter(
      (s) => !rows.some((r) => r.name === s.name && r.variant === s.variant),
    );
    if (rows.length === 0 || missing.length > 0) {
      const names = (missing.length > 0 ? missing : request.syncs).map((s) =>
        s.variant === BASE_VARIANT ? s.name : `${s.name}::${s.variant}`,
      );
      throw new OrchestratorError(
        'no_syncs_found',
        names.length > 0 ? `No syncs found: ${names.join(', ')}` : 'No syncs found',
      );
    }
    return rows;
  }

  async oneSync(request: {
    caller: { environmentId: number };
    providerConfigKey: string;
    connectionId: string;
    name: string;
    variant: string;
  }): Promise<SyncRow> {
    const { environmentId } = request.caller;
    await this.requireConnection(environmentId, request.providerConfigKey, request.connectionId);
    const row = await this.db.sync.findUnique({
      where: {
        environmentId_providerConfigKey_connectionId_name_variant: {
          environmentId,
          providerConfigKey: request.providerConfigKey,
          connectionId: request.connectionId,
          name: request.name,
          variant: request.variant,
        },
      },
    });
    if (!row)
      throw new OrchestratorError('unknown_sync', `No sync "${request.name}" (variant "${request.variant}")`);
    return row;
  }

  async requireConnection(environmentId: number, providerConfigKey: string, connectionId: string) {
    const found = await this.connectionIds(environmentId, providerConfigKey, connectionId);
    if (found.length === 0) {
      throw new OrchestratorError(
        'unknown_connection',
        'Provided ConnectionId and ProviderConfigKey does not match a valid connection',
      );
    }
  }

  connectionIds(environmentId: number, providerConfigKey: string, connectionId?: string) {
    return this.nats.call(CONNECTION_REQUESTS.idsForIntegration, {
      environmentId,
      providerConfigKey,
      ...(connectionId !== undefined ? { connectionId } : {}),
    });
  }

  syncFunctions(environmentId: number, providerConfigKey: string): Promise<FunctionWithVersion[]> {
    return this.db.deployedFunction.findMany({
      where: { environmentId, providerConfigKey, type: 'sync', enabled: true },
      include: WITH_VERSION,
    });
  }

  async functionsByName(environmentId: number, providerConfigKey: string) {
    const functions = await this.syncFunctions(environmentId, providerConfigKey);
    return new Map(functions.map((f) => [f.name, f]));
  }
}
