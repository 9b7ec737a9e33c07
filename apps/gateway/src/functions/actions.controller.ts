import { randomUUID } from 'node:crypto';
import { Body, Controller, Get, Inject, Param, Post, Query, Res } from '@nestjs/common';
import {
  RUN_ID_HEADER,
  SwitchboardError,
  triggerActionBodySchema,
  triggerActionHeadersSchema,
  ACTION_REPLY_BUCKET,
  type ActionOutputReply,
  type ActionTriggerReply,
  type Caller as CallerType,
  type ErrorCode,
  FUNCTIONS_API_REQUESTS,
  FUNCTION_HOST_REQUESTS,
} from '@switchboard/contracts';
import { NATS_CONNECTION, NatsRequester, PayloadStore } from '@switchboard/messaging';
import type { NatsConnection } from 'nats';
import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import { Caller } from '../access/caller.decorator';
import { RequireScope } from '../access/route-access';
import { GATEWAY_ENV, type GatewayEnv } from '../config/env';
import { createZodDto } from 'nestjs-zod';
import { NoQuery, RequestHeaders } from '../http/validation';

class TriggerActionHeadersDto extends createZodDto(triggerActionHeadersSchema) {}
class TriggerActionBodyDto extends createZodDto(triggerActionBodySchema) {}
class ActionIdParamsDto extends createZodDto(z.object({ id: z.string().min(1).max(255) })) {}

/** Codes of an action that ran and failed (it has logs under its run id), not of a refused request. */
const RUN_FAILURE_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'action_script_runtime_error',
  'script_internal_error',
  'action_script_failure',
  'invalid_action_input',
  'invalid_action_output',
  'action_output_too_large',
  'script_timeout',
]);
const isRunFailure = (code: ErrorCode): boolean => RUN_FAILURE_CODES.has(code);

/** An action's output as JSON whatever it is (a bare string too), as Nango answers it. */
function sendJson(reply: FastifyReply, status: number, value: unknown): void {
  void reply
    .status(status)
    .type('application/json')
    .send(JSON.stringify(value ?? null));
}

@Controller('action')
export class ActionsController {
  constructor(
    private readonly nats: NatsRequester,
    @Inject(GATEWAY_ENV) private readonly env: GatewayEnv,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
  ) {}

  /** The output inline, or (too large for a NATS reply) from where the orchestrator put it, then deleted. */
  private async sendOutput(reply: FastifyReply, result: ActionOutputReply): Promise<void> {
    if (!result.outputRef) {
      sendJson(reply, 200, result.output);
      return;
    }
    const blob = await new PayloadStore(this.nc, ACTION_REPLY_BUCKET).take(result.outputRef);
    if (!blob) throw new SwitchboardError('server_error', 'The action output expired before it was sent');
    void reply.status(200).type('application/json').send(Buffer.from(blob));
  }

  /**
   * `triggerAction` (200 with the output) and `triggerActionAsync` (`X-Async: true`: 202 with where to
   * read the result). Both name the run in a response header, for `GET /functions/runs/{id}/logs`.
   */
  @Post('trigger')
  @RequireScope('environment:actions:trigger')
  async trigger(
    @Caller() caller: CallerType,
    @Res() reply: FastifyReply,
    @Body() { action_name, input }: TriggerActionBodyDto,
    @RequestHeaders() parsedHeaders: TriggerActionHeadersDto,
    @Query() _query: NoQuery,
  ): Promise<void> {
    const isAsync = parsedHeaders['x-async'] === 'true';
    // Chosen here so that a run that fails is named in the answer as one that succeeds.
    const invocationId = isAsync ? undefined : randomUUID();
    let result: ActionTriggerReply;
    try {
      result = await this.nats.call(
        FUNCTION_HOST_REQUESTS.actionTrigger,
        {
          caller,
          connectionId: parsedHeaders['connection-id'],
          providerConfigKey: parsedHeaders['provider-config-key'],
          actionName: action_name,
          ...(input !== undefined ? { input } : {}),
          async: isAsync,
          maxRetries: parsedHeaders['x-max-retries'] ?? 0,
          ...(invocationId ? { invocationId } : {}),
        },
        // A synchronous action holds the request for as long as the script may run.
        {
          timeoutMs: isAsync
            ? this.env.NATS_REQUEST_TIMEOUT_MS
            : this.env.SWITCHBOARD_ACTION_TIMEOUT_MS + 10_000,
        },
      );
    } catch (error) {
      if (invocationId && error instanceof SwitchboardError && isRunFailure(error.code)) {
        void reply.header(RUN_ID_HEADER, invocationId);
      }
      throw error;
    }
    void reply.header(RUN_ID_HEADER, result.invocationId);
    if (result.async) {
      const statusUrl = `/action/${result.invocationId}`;
      void reply.header('location', statusUrl);
      sendJson(reply, 202, { id: result.invocationId, statusUrl });
      return;
    }
    await this.sendOutput(reply, result);
  }

  /** `getAsyncActionResult`: 404 `not_found` while it runs, the output once done, its error if it failed. */
  @Get(':id')
  @RequireScope('environment:actions:trigger')
  async result(
    @Caller() caller: CallerType,
    @Res() reply: FastifyReply,
    @Query() _query: NoQuery,
    @Param() { id }: ActionIdParamsDto,
  ): Promise<void> {
    if (!z.string().uuid().safeParse(id).success) {
      throw new SwitchboardError('not_found', `No action '${id}' found`);
    }
    const result = await this.nats.call(FUNCTIONS_API_REQUESTS.actionResult, {
      caller,
      id,
    });
    await this.sendOutput(reply, result);
  }
}
