import { Controller } from '@nestjs/common';
import {
  type SyncWebhookSubscriptionsReply,
  type SyncWebhookSubscriptionsRequest,
  SYNC_WEBHOOK_REQUESTS,
} from '@switchboard/contracts';
import { NatsHandler } from '@switchboard/messaging';
import { DeployedFunctionsCache } from '../functions/deployed-functions-cache';

@Controller()
export class SyncWebhooksHandlers {
  constructor(private readonly lookups: DeployedFunctionsCache) {}

  /**
   * webhook-relay asks which webhooks the integration's syncs subscribe to before it publishes a routed
   * provider webhook for them (the same cached look-up the consumer uses, dropped by deploys).
   */
  @NatsHandler(SYNC_WEBHOOK_REQUESTS.subscriptions)
  async subscriptions(request: SyncWebhookSubscriptionsRequest): Promise<SyncWebhookSubscriptionsReply> {
    const syncs = await this.lookups.webhookSyncsOf(request.environmentId, request.providerConfigKey);
    return { subscriptions: [...new Set(syncs.flatMap((s) => s.subscriptions))] };
  }
}
