import { Controller } from '@nestjs/common';
import {
  type IngestReply,
  type IngestRequest,
  type WebhookRefusal,
  WEBHOOK_REQUESTS,
} from '@switchboard/contracts';
import { NatsHandler } from '@switchboard/messaging';
import { IngressService } from './ingress.service';

@Controller()
export class IngressHandlers {
  constructor(private readonly ingress: IngressService) {}

  /** Remote mode (`SWITCHBOARD_WEBHOOK_INGRESS_MODE=remote` on the gateway): the whole ingress runs here. */
  @NatsHandler(WEBHOOK_REQUESTS.ingest)
  async ingest(request: IngestRequest): Promise<IngestReply> {
    return this.ingress.ingest(request);
  }

  /** Embedded mode: the gateway refused a webhook (bad signature); it is logged here, with the deliveries. */
  @NatsHandler(WEBHOOK_REQUESTS.recordRefusal)
  async recordRefusal(refusal: WebhookRefusal): Promise<{ recorded: true }> {
    await this.ingress.recordRefusal(refusal);
    return { recorded: true };
  }
}
