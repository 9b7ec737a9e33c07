import { Controller } from '@nestjs/common';
import {
  API_KEY_SUBJECTS,
  createApiKeyRequestSchema,
  listApiKeysRequestSchema,
  revokeApiKeyRequestSchema,
  verifyApiKeyRequestSchema,
} from '@switchboard/contracts';
import { NatsHandler } from '@switchboard/messaging';
import type { z } from 'zod';
import { ApiKeysService } from './api-keys.service';

@Controller()
export class ApiKeysHandlers {
  constructor(private readonly keys: ApiKeysService) {}

  @NatsHandler(API_KEY_SUBJECTS.verify, verifyApiKeyRequestSchema)
  async verify(req: z.infer<typeof verifyApiKeyRequestSchema>) {
    return this.keys.verify(req.keyHash);
  }

  @NatsHandler(API_KEY_SUBJECTS.create, createApiKeyRequestSchema)
  async create(req: z.infer<typeof createApiKeyRequestSchema>) {
    return this.keys.create(req.caller, req.body);
  }

  @NatsHandler(API_KEY_SUBJECTS.list, listApiKeysRequestSchema)
  async list(req: z.infer<typeof listApiKeysRequestSchema>) {
    return this.keys.list(req.caller);
  }

  @NatsHandler(API_KEY_SUBJECTS.revoke, revokeApiKeyRequestSchema)
  async revoke(req: z.infer<typeof revokeApiKeyRequestSchema>) {
    return this.keys.revoke(req.caller, req.scopes, req.id);
  }
}
