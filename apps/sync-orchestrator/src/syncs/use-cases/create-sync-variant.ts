import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import {
  BASE_VARIANT,
  MAX_SYNC_VARIANTS,
  type SyncVariantRequest,
  type SyncVariantResponse,
} from '@switchboard/contracts';
import type { OrchestratorDb } from '@switchboard/db';
import { ORCHESTRATOR_DB } from '../../database/database.module';
import { storedConfig } from '../../functions/function-config';
import { OrchestratorError } from '../../sync-orchestrator.errors';
import { SyncLookups } from '../sync-lookups';
import { SyncsService } from '../syncs.service';
import { withTemporal } from '../temporal-call';

/** `POST /sync/{name}/variant/{variant}`: a sync of the same script under another variant, with its own schedule. */
@Injectable()
export class CreateSyncVariant {
  constructor(
    @Inject(ORCHESTRATOR_DB) private readonly db: OrchestratorDb,
    private readonly lookups: SyncLookups,
    private readonly syncs: SyncsService,
  ) {}

  async execute(request: SyncVariantRequest): Promise<SyncVariantResponse> {
    const { environmentId } = request.caller;
    if (request.variant.toLowerCase() === BASE_VARIANT) {
      throw new OrchestratorError('invalid_variant', `Variant name "${request.variant}" is protected.`);
    }
    await this.lookups.requireConnection(environmentId, request.providerConfigKey, request.connectionId);
    const fn = (await this.lookups.functionsByName(environmentId, request.providerConfigKey)).get(
      request.name,
    );
    if (!fn) throw new OrchestratorError('unknown_sync', `No sync "${request.name}"`);
    const key = {
      environmentId,
      providerConfigKey: request.providerConfigKey,
      connectionId: request.connectionId,
      name: request.name,
    };
    const row = await this.db.$transaction(async (tx) => {
      // One variant creation of a sync and connection at a time: two at once could both pass the cap.
      await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('orchestrator.sync-variant'), hashtext(${JSON.stringify([environmentId, key.providerConfigKey, key.connectionId, key.name])}))`;
      const siblings = await tx.sync.findMany({ where: key, select: { variant: true } });
      if (siblings.some((s) => s.variant === request.variant)) {
        throw new OrchestratorError(
          'sync_variant_already_exists',
          `Sync "${request.name}" already has a variant "${request.variant}" on this connection`,
        );
      }
      if (siblings.length >= MAX_SYNC_VARIANTS) {
        throw new OrchestratorError(
          'resource_capped',
          `Maximum number of variants per sync (${MAX_SYNC_VARIANTS}) reached`,
        );
      }
      return tx.sync.create({ data: { id: randomUUID(), ...key, variant: request.variant } });
    });
    try {
      await withTemporal(() => this.syncs.schedule(row, storedConfig(fn)));
    } catch (error) {
      await this.db.sync.delete({ where: { id: row.id } });
      throw error;
    }
    return { id: row.id, name: row.name, variant: row.variant };
  }
}
