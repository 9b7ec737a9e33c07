import { Controller } from '@nestjs/common';
import {
  getWebhookSettingsRequestSchema,
  rotateSigningKeyRequestSchema,
  updateWebhookSettingsRequestSchema,
  WEBHOOK_SUBJECTS,
  type EnvironmentWebhookState,
  type RotatedSigningKey,
} from '@switchboard/contracts';
import { NatsHandler } from '@switchboard/messaging';
import type { z } from 'zod';
import { SettingsService } from './settings.service';

@Controller()
export class SettingsHandlers {
  constructor(private readonly settings: SettingsService) {}

  @NatsHandler(WEBHOOK_SUBJECTS.getSettings, getWebhookSettingsRequestSchema)
  async get(request: z.infer<typeof getWebhookSettingsRequestSchema>): Promise<EnvironmentWebhookState> {
    return this.settings.state(request.environmentId);
  }

  @NatsHandler(WEBHOOK_SUBJECTS.updateSettings, updateWebhookSettingsRequestSchema)
  async update(
    request: z.infer<typeof updateWebhookSettingsRequestSchema>,
  ): Promise<EnvironmentWebhookState> {
    return this.settings.update(request.environmentId, request.patch);
  }

  @NatsHandler(WEBHOOK_SUBJECTS.rotateSigningKey, rotateSigningKeyRequestSchema)
  async rotate(request: z.infer<typeof rotateSigningKeyRequestSchema>): Promise<RotatedSigningKey> {
    return this.settings.rotate(request.environmentId);
  }
}
