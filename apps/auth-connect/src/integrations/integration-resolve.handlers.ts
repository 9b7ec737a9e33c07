import { Controller } from '@nestjs/common';
import {
  resolveIntegrationRequestSchema,
  type ResolvedIntegration,
  AUTH_INTERNAL_REQUESTS,
} from '@switchboard/contracts';
import { NatsHandler } from '@switchboard/messaging';
import type { z } from 'zod';
import { IntegrationsService } from './integrations.service';

/**
 * Internal bus only: hands an integration's decrypted client secret, private key and webhook secret to
 * the services that act on a provider (proxy, vault, webhook relay). The gateway never routes to this
 * subject, and the reply is never logged.
 */
@Controller()
export class IntegrationResolveHandlers {
  constructor(private readonly integrations: IntegrationsService) {}

  @NatsHandler(AUTH_INTERNAL_REQUESTS.resolveIntegration)
  async resolve(req: z.infer<typeof resolveIntegrationRequestSchema>): Promise<ResolvedIntegration> {
    return this.integrations.resolveInternal(req.environmentId, req.uniqueKey);
  }
}
