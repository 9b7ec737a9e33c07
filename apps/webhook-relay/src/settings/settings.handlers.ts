import { Controller } from '@nestjs/common';
import {
  getWebhookSettingsRequestSchema,
  rotateSigningKeyRequestSchema,
  updateWebhookSettingsRequestSchema,
  type EnvironmentWebhookState,
  type RotatedSigningKey,
  WEBHOOK_REQUESTS,
} from '@switchboard/contracts';
import { NatsHandler } from '@switchboard/messaging';
import type { z } from 'zod';
import { SettingsService } from './settings.service';

@Controller()
export class SettingsHandlers {
  constructor(private readonly settings: SettingsService) {}

  @NatsHandler(WEBHOOK_REQUESTS.getSettings)
  async get(request: z.infer<typeof getWebhookSettingsRequestSchema>): Promise<EnvironmentWebhookState> {
    return this.settings.state(request.environmentId);
  }

  @NatsHandler(WEBHOOK_REQUESTS.updateSettings)
  async update(
    request: z.infer<typeof updateWebhookSettingsRequestSchema>,
  ): Promise<EnvironmentWebhookState> {
    return this.settings.update(request.environmentId, request.patch);
  }

  @NatsHandler(WEBHOOK_REQUESTS.rotateSigningKey)
  async rotate(request: z.infer<typeof rotateSigningKeyRequestSchema>): Promise<RotatedSigningKey> {
    return this.settings.rotate(request.environmentId);
  }
}
