import { Controller } from '@nestjs/common';
import {
  type SyncCommandRequest,
  type SyncFrequencyRequest,
  type SyncStatusRequest,
  type SyncStatusResponse,
  type SyncTriggerRequest,
  type SyncVariantRequest,
  type SyncVariantResponse,
  SYNC_REQUESTS,
} from '@switchboard/contracts';
import { NatsHandler } from '@switchboard/messaging';
import { CreateSyncVariant } from './use-cases/create-sync-variant';
import { DeleteSyncVariant } from './use-cases/delete-sync-variant';
import { SetSyncFrequency } from './use-cases/set-sync-frequency';
import { SetSyncsPaused } from './use-cases/set-syncs-paused';
import { SyncStatus } from './use-cases/sync-status';
import { TriggerSyncs } from './use-cases/trigger-syncs';

/** The sync API (`/sync/*` on the gateway). */
@Controller()
export class SyncsHandlers {
  constructor(
    private readonly triggerSyncs: TriggerSyncs,
    private readonly setSyncsPaused: SetSyncsPaused,
    private readonly syncStatus: SyncStatus,
    private readonly setSyncFrequency: SetSyncFrequency,
    private readonly createSyncVariant: CreateSyncVariant,
    private readonly deleteSyncVariant: DeleteSyncVariant,
  ) {}

  @NatsHandler(SYNC_REQUESTS.trigger)
  trigger(request: SyncTriggerRequest): Promise<{ success: true }> {
    return this.triggerSyncs.execute(request);
  }

  @NatsHandler(SYNC_REQUESTS.pause)
  pause(request: SyncCommandRequest): Promise<{ success: true }> {
    return this.setSyncsPaused.execute(request, true);
  }

  @NatsHandler(SYNC_REQUESTS.start)
  start(request: SyncCommandRequest): Promise<{ success: true }> {
    return this.setSyncsPaused.execute(request, false);
  }

  @NatsHandler(SYNC_REQUESTS.status)
  status(request: SyncStatusRequest): Promise<SyncStatusResponse> {
    return this.syncStatus.execute(request);
  }

  @NatsHandler(SYNC_REQUESTS.frequency)
  frequency(request: SyncFrequencyRequest): Promise<{ frequency: string }> {
    return this.setSyncFrequency.execute(request);
  }

  @NatsHandler(SYNC_REQUESTS.variantCreate)
  createVariant(request: SyncVariantRequest): Promise<SyncVariantResponse> {
    return this.createSyncVariant.execute(request);
  }

  @NatsHandler(SYNC_REQUESTS.variantDelete)
  deleteVariant(request: SyncVariantRequest): Promise<{ success: true }> {
    return this.deleteSyncVariant.execute(request);
  }
}
