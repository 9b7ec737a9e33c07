import { Controller } from '@nestjs/common';
import {
  ON_EVENT_SUBJECTS,
  onEventConnectionSchema,
  validateConnectionRequestSchema,
  type OnEventConnection,
  type OnEventReply,
  type ValidateConnectionRequest,
} from '@switchboard/contracts';
import { NatsHandler } from '@switchboard/messaging';
import { OnEventService } from './on-event.service';

@Controller()
export class OnEventHandlers {
  constructor(private readonly onEvents: OnEventService) {}

  /** auth-connect asks before it stores a new connection (or a reconnect's new credentials). */
  @NatsHandler(ON_EVENT_SUBJECTS.validateConnection, validateConnectionRequestSchema)
  validateConnection(request: ValidateConnectionRequest): Promise<OnEventReply> {
    return this.onEvents.validate(request);
  }

  /** The vault asks before it deletes a connection (and deletes whatever the answer). */
  @NatsHandler(ON_EVENT_SUBJECTS.preConnectionDeletion, onEventConnectionSchema)
  preConnectionDeletion(request: OnEventConnection): Promise<OnEventReply> {
    return this.onEvents.beforeDeletion(request.caller, request.providerConfigKey, request.connectionId);
  }
}
