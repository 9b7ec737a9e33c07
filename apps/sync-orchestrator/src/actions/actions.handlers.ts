import { Controller } from '@nestjs/common';
import {
  actionTriggerRequestSchema,
  FUNCTION_HOST_SUBJECTS,
  FUNCTIONS_API_SUBJECTS,
  invocationRequestSchema,
  type ActionTriggerReply,
  type ActionTriggerRequest,
  type InvocationRequest,
  type RunLogsResponse,
} from '@switchboard/contracts';
import { NatsHandler } from '@switchboard/messaging';
import { ActionsService } from './actions.service';

@Controller()
export class ActionsHandlers {
  constructor(private readonly actions: ActionsService) {}

  @NatsHandler(FUNCTION_HOST_SUBJECTS.actionTrigger, actionTriggerRequestSchema)
  trigger(request: ActionTriggerRequest): Promise<ActionTriggerReply> {
    return this.actions.trigger(request);
  }

  @NatsHandler(FUNCTIONS_API_SUBJECTS.actionResult, invocationRequestSchema)
  result(request: InvocationRequest): Promise<unknown> {
    return this.actions.result(request.caller, request.id);
  }

  @NatsHandler(FUNCTIONS_API_SUBJECTS.runLogs, invocationRequestSchema)
  logs(request: InvocationRequest): Promise<RunLogsResponse['data']> {
    return this.actions.logs(request.caller, request.id);
  }
}
