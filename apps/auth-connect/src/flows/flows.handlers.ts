import { Controller } from '@nestjs/common';
import {
  bindFlowRequestSchema,
  callbackFlowRequestSchema,
  startFlowRequestSchema,
  submitFlowRequestSchema,
  CONNECT_FLOW_REQUESTS,
} from '@switchboard/contracts';
import { NatsHandler } from '@switchboard/messaging';
import type { z } from 'zod';
import { FormFlowsService } from './form-flows.service';
import { RedirectFlowsService } from './redirect-flows.service';

@Controller()
export class FlowsHandlers {
  constructor(
    private readonly redirects: RedirectFlowsService,
    private readonly forms: FormFlowsService,
  ) {}

  @NatsHandler(CONNECT_FLOW_REQUESTS.start)
  async start(req: z.infer<typeof startFlowRequestSchema>) {
    return this.redirects.start(req);
  }

  @NatsHandler(CONNECT_FLOW_REQUESTS.callback)
  async callback(req: z.infer<typeof callbackFlowRequestSchema>) {
    return this.redirects.callback(req.query, req.browserNonce);
  }

  @NatsHandler(CONNECT_FLOW_REQUESTS.bind)
  async bind(req: z.infer<typeof bindFlowRequestSchema>) {
    return this.redirects.bind(req);
  }

  @NatsHandler(CONNECT_FLOW_REQUESTS.submit)
  async submit(req: z.infer<typeof submitFlowRequestSchema>) {
    return this.forms.submit(req);
  }
}
