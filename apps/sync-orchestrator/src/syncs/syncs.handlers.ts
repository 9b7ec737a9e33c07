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
import { SyncsService } from './syncs.service';

/** The sync API (`/sync/*` on the gateway). */
@Controller()
export class SyncsHandlers {
  constructor(private readonly syncs: SyncsService) {}

  @NatsHandler(SYNC_REQUESTS.trigger)
  trigger(request: SyncTriggerRequest): Promise<{ success: true }> {
    return this.syncs.trigger(request);
  }

  @NatsHandler(SYNC_REQUESTS.pause)
  pause(request: SyncCommandRequest): Promise<{ success: true }> {
    return this.syncs.pause(request);
  }

  @NatsHandler(SYNC_REQUESTS.start)
  start(request: SyncCommandRequest): Promise<{ success: true }> {
    return this.syncs.start(request);
  }

  @NatsHandler(SYNC_REQUESTS.status)
  status(request: SyncStatusRequest): Promise<SyncStatusResponse> {
    return this.syncs.status(request);
  }

  @NatsHandler(SYNC_REQUESTS.frequency)
  frequency(request: SyncFrequencyRequest): Promise<{ frequency: string }> {
    return this.syncs.setFrequency(request);
  }

  @NatsHandler(SYNC_REQUESTS.variantCreate)
  createVariant(request: SyncVariantRequest): Promise<SyncVariantResponse> {
    return this.syncs.createVariant(request);
  }

  @NatsHandler(SYNC_REQUESTS.variantDelete)
  deleteVariant(request: SyncVariantRequest): Promise<{ success: true }> {
    return this.syncs.deleteVariant(request);
  }
}
