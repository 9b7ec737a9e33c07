import { Controller } from '@nestjs/common';
import {
  SYNC_SUBJECTS,
  syncCommandRequestSchema,
  syncFrequencyRequestSchema,
  syncStatusRequestSchema,
  syncTriggerRequestSchema,
  syncVariantRequestSchema,
  type SyncCommandRequest,
  type SyncFrequencyRequest,
  type SyncStatusRequest,
  type SyncStatusResponse,
  type SyncTriggerRequest,
  type SyncVariantRequest,
  type SyncVariantResponse,
} from '@switchboard/contracts';
import { NatsHandler } from '@switchboard/messaging';
import { SyncsService } from './syncs.service';

/** The sync API (`/sync/*` on the gateway). */
@Controller()
export class SyncsHandlers {
  constructor(private readonly syncs: SyncsService) {}

  @NatsHandler(SYNC_SUBJECTS.trigger, syncTriggerRequestSchema)
  trigger(request: SyncTriggerRequest): Promise<{ success: true }> {
    return this.syncs.trigger(request);
  }

  @NatsHandler(SYNC_SUBJECTS.pause, syncCommandRequestSchema)
  pause(request: SyncCommandRequest): Promise<{ success: true }> {
    return this.syncs.pause(request);
  }

  @NatsHandler(SYNC_SUBJECTS.start, syncCommandRequestSchema)
  start(request: SyncCommandRequest): Promise<{ success: true }> {
    return this.syncs.start(request);
  }

  @NatsHandler(SYNC_SUBJECTS.status, syncStatusRequestSchema)
  status(request: SyncStatusRequest): Promise<SyncStatusResponse> {
    return this.syncs.status(request);
  }

  @NatsHandler(SYNC_SUBJECTS.frequency, syncFrequencyRequestSchema)
  frequency(request: SyncFrequencyRequest): Promise<{ frequency: string }> {
    return this.syncs.setFrequency(request);
  }

  @NatsHandler(SYNC_SUBJECTS.variantCreate, syncVariantRequestSchema)
  createVariant(request: SyncVariantRequest): Promise<SyncVariantResponse> {
    return this.syncs.createVariant(request);
  }

  @NatsHandler(SYNC_SUBJECTS.variantDelete, syncVariantRequestSchema)
  deleteVariant(request: SyncVariantRequest): Promise<{ success: true }> {
    return this.syncs.deleteVariant(request);
  }
}
