import { Controller, Inject } from '@nestjs/common';
import {
  type ActionOutputReply,
  type ActionRunsPage,
  type ActionTriggerReply,
  type ActionTriggerRequest,
  type InvocationRequest,
  type ListRunsRequest,
  type RunLogsResponse,
  FUNCTIONS_API_REQUESTS,
  FUNCTION_HOST_REQUESTS,
} from '@switchboard/contracts';
import { NATS_CONNECTION, NatsHandler } from '@switchboard/messaging';
import type { NatsConnection } from 'nats';
import { ActionRuns } from './action-runs';
import { ActionsService } from './actions.service';
import { outputReply } from './output-reply';

@Controller()
export class ActionsHandlers {
  constructor(
    private readonly actions: ActionsService,
    private readonly runs: ActionRuns,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
  ) {}

  @NatsHandler(FUNCTION_HOST_REQUESTS.actionTrigger)
  async trigger(request: ActionTriggerRequest): Promise<ActionTriggerReply> {
    const result = await this.actions.trigger(request);
    if (result.async) return { async: true, invocationId: result.invocationId };
    return {
      async: false,
      invocationId: result.invocationId,
      ...(await outputReply(this.nc, result.output)),
    };
  }

  @NatsHandler(FUNCTIONS_API_REQUESTS.actionResult)
  async result(request: InvocationRequest): Promise<ActionOutputReply> {
    return outputReply(this.nc, await this.actions.result(request.caller, request.id));
  }

  @NatsHandler(FUNCTIONS_API_REQUESTS.runLogs)
  logs(request: InvocationRequest): Promise<RunLogsResponse['data']> {
    return this.actions.logs(request.caller, request.id);
  }

  @NatsHandler(FUNCTIONS_API_REQUESTS.listRuns)
  list(request: ListRunsRequest): Promise<ActionRunsPage> {
    return this.runs.list(request.caller, request.query);
  }
}
