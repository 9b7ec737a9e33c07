import { Controller } from '@nestjs/common';
import {
  createApiKeyRequestSchema,
  listApiKeysRequestSchema,
  revokeApiKeyRequestSchema,
  verifyApiKeyRequestSchema,
  API_KEY_REQUESTS,
} from '@switchboard/contracts';
import { NatsHandler } from '@switchboard/messaging';
import type { z } from 'zod';
import { ApiKeysService } from './api-keys.service';

@Controller()
export class ApiKeysHandlers {
  constructor(private readonly keys: ApiKeysService) {}

  @NatsHandler(API_KEY_REQUESTS.verify)
  async verify(req: z.infer<typeof verifyApiKeyRequestSchema>) {
    return this.keys.verify(req.keyHash);
  }

  @NatsHandler(API_KEY_REQUESTS.create)
  async create(req: z.infer<typeof createApiKeyRequestSchema>) {
    return this.keys.create(req.caller, req.body);
  }

  @NatsHandler(API_KEY_REQUESTS.list)
  async list(req: z.infer<typeof listApiKeysRequestSchema>) {
    return this.keys.list(req.caller);
  }

  @NatsHandler(API_KEY_REQUESTS.revoke)
  async revoke(req: z.infer<typeof revokeApiKeyRequestSchema>) {
    return this.keys.revoke(req.caller, req.scopes, req.id);
  }
}
