import { Controller } from '@nestjs/common';
import {
  ingestRequestSchema,
  WEBHOOK_SUBJECTS,
  type IngestReply,
  type IngestRequest,
} from '@switchboard/contracts';
import { NatsHandler } from '@switchboard/messaging';
import { IngressService } from './ingress.service';

@Controller()
export class IngressHandlers {
  constructor(private readonly ingress: IngressService) {}

  @NatsHandler(WEBHOOK_SUBJECTS.ingest, ingestRequestSchema)
  async ingest(request: IngestRequest): Promise<IngestReply> {
    return this.ingress.ingest(request);
  }
}
