import { Controller, Get, Param, Query } from '@nestjs/common';
import {
  FUNCTIONS_API_SUBJECTS,
  type Caller as CallerType,
  type RunLogsResponse,
} from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import { z } from 'zod';
import { Caller } from '../access/caller.decorator';
import { RequireScope } from '../access/route-access';
import { parseNoQuery, parseParams } from '../http/validation';

const paramsSchema = z.object({ id: z.string().uuid() });
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
    parseNoQuery(query);
    const data = await this.nats.request<RunLogsResponse['data']>(FUNCTIONS_API_SUBJECTS.runLogs, {
      caller,
      id,
    });
    return { data };
  }
}
