import { Injectable } from '@nestjs/common';
import { BASE_VARIANT, type SyncVariantRequest } from '@switchboard/contracts';
import { storedConfig } from '../../functions/function-config';
import { OrchestratorError } from '../../sync-orchestrator.errors';
import { SyncLookups } from '../sync-lookups';
import { SyncsService } from '../syncs.service';
import { withTemporal } from '../temporal-call';

/** `DELETE /sync/{name}/variant/{variant}`: the variant's sync goes, with its schedule, checkpoint and records. */
@Injectable()
export class DeleteSyncVariant {
  constructor(
    private readonly lookups: SyncLookups,
    private readonly syncs: SyncsService,
  ) {}

  async execute(request: SyncVariantRequest): Promise<{ success: true }> {
    if (request.variant.toLowerCase() === BASE_VARIANT) {
      throw new OrchestratorError('invalid_variant', `Variant name "${request.variant}" is protected.`);
    }
    // Nango answers a variant that is not there with 404 not_found (unknown_sync is for the other routes).
    const row = await this.lookups.oneSync(request).catch((error: unknown) => {
      if (error instanceof OrchestratorError && error.code === 'unknown_sync') {
        throw new OrchestratorError(
          'not_found',
          `No variant "${request.variant}" of sync "${request.name}" on this connection`,
        );
      }
      throw error;
    });
    const fn = (
      await this.lookups.functionsByName(request.caller.environmentId, request.providerConfigKey)
    ).get(request.name);
    await withTemporal(() => this.syncs.removeRows([row], fn ? storedConfig(fn).returns : []));
    return { success: true };
  }
}
