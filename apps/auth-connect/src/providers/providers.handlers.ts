import { Controller } from '@nestjs/common';
import {
  getProviderRequestSchema,
  listProvidersRequestSchema,
  PROVIDER_REQUESTS,
} from '@switchboard/contracts';
import { NatsHandler } from '@switchboard/messaging';
import type { z } from 'zod';
import { ProvidersService } from './providers.service';

@Controller()
export class ProvidersHandlers {
  constructor(private readonly providers: ProvidersService) {}

  @NatsHandler(PROVIDER_REQUESTS.list)
  async list(req: z.infer<typeof listProvidersRequestSchema>) {
    return this.providers.list(req.search);
  }

  @NatsHandler(PROVIDER_REQUESTS.get)
  async get(req: z.infer<typeof getProviderRequestSchema>) {
    return this.providers.get(req.name);
  }
}
