import { Controller, Get, Param, Query } from '@nestjs/common';
import {
  type Caller as CallerType,
  type RunLogsResponse,
  FUNCTIONS_API_REQUESTS,
} from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import { z } from 'zod';
import { Caller } from '../access/caller.decorator';
import { RequireScope } from '../access/route-access';
import { parseParams, parseQuery } from '../http/validation';

const paramsSchema = z.object({ id: z.string().uuid() });
const noQuery = z.object({}).strict();

/** A run's logs (`nango.log` lines of every attempt); the run id is in the trigger answer's header. */
@Controller('functions/runs')
export class RunsController {
  constructor(private readonly nats: NatsRequester) {}

  @Get(':id/logs')
  @RequireScope('environment:functions:read')
  async logs(
    @Caller() caller: CallerType,
    @Param() params: unknown,
    @Query() query: unknown,
  ): Promise<RunLogsResponse> {
    const { id } = parseParams(paramsSchema, params);
    parseQuery(noQuery, query);
    const data = await this.nats.call(FUNCTIONS_API_REQUESTS.runLogs, {
      caller,
      id,
    });
    return { data };
  }
}
