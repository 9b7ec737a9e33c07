import { Controller } from '@nestjs/common';
import {
  createIntegrationRequestSchema,
  deleteIntegrationRequestSchema,
  getIntegrationRequestSchema,
  listIntegrationsRequestSchema,
  updateIntegrationRequestSchema,
  INTEGRATION_REQUESTS,
} from '@switchboard/contracts';
import { NatsHandler } from '@switchboard/messaging';
import type { z } from 'zod';
import { IntegrationsService } from './integrations.service';

@Controller()
export class IntegrationsHandlers {
  constructor(private readonly integrations: IntegrationsService) {}

  @NatsHandler(INTEGRATION_REQUESTS.list)
  async list(req: z.infer<typeof listIntegrationsRequestSchema>) {
    return this.integrations.list(req.caller);
  }

  @NatsHandler(INTEGRATION_REQUESTS.get)
  async get(req: z.infer<typeof getIntegrationRequestSchema>) {
    return this.integrations.get(req.caller, req.uniqueKey, req.include);
  }

  @NatsHandler(INTEGRATION_REQUESTS.create)
  async create(req: z.infer<typeof createIntegrationRequestSchema>) {
    return this.integrations.create(req.caller, req.body);
  }

  @NatsHandler(INTEGRATION_REQUESTS.update)
  async update(req: z.infer<typeof updateIntegrationRequestSchema>) {
    return this.integrations.update(req.caller, req.uniqueKey, req.body);
  }

  @NatsHandler(INTEGRATION_REQUESTS.delete)
  async delete(req: z.infer<typeof deleteIntegrationRequestSchema>) {
    return this.integrations.delete(req.caller, req.uniqueKey);
  }
}
