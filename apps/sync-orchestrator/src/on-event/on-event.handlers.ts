import { Controller, Logger } from '@nestjs/common';
import {
  type OnEventConnection,
  type OnEventReply,
  type ValidateConnectionRequest,
  ON_EVENT_REQUESTS,
} from '@switchboard/contracts';
import { NatsHandler } from '@switchboard/messaging';
import { SyncsService } from '../syncs/syncs.service';
import { OnEventService } from './on-event.service';

@Controller()
export class OnEventHandlers {
  private readonly logger = new Logger('OnEvents');

  constructor(
    private readonly onEvents: OnEventService,
    private readonly syncs: SyncsService,
  ) {}

  /** auth-connect asks before it stores a new connection (or a reconnect's new credentials). */
  @NatsHandler(ON_EVENT_REQUESTS.validateConnection)
  validateConnection(request: ValidateConnectionRequest): Promise<OnEventReply> {
    return this.onEvents.validate(request);
  }

  /**
   * The vault asks before it deletes a connection (and deletes whatever the answer): the scripts run
   * first, while the connection still exists, then its syncs stop (schedules, checkpoints, records).
   */
  @NatsHandler(ON_EVENT_REQUESTS.preConnectionDeletion)
  async preConnectionDeletion(request: OnEventConnection): Promise<OnEventReply> {
    const reply = await this.onEvents.beforeDeletion(
      request.caller,
      request.providerConfigKey,
      request.connectionId,
    );
    try {
      await this.syncs.connectionDeleted(
        request.caller.environmentId,
        request.providerConfigKey,
        request.connectionId,
      );
    } catch (error) {
      this.logger.error(
        `the syncs of a deleted connection of ${request.providerConfigKey} were not all removed: ${(error as Error).message}`,
      );
    }
    return reply;
  }
}
