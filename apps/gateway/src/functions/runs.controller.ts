import { Controller, Get, Param, Query } from '@nestjs/common';
import {
  listRunsQuerySchema,
  type ActionRunsPage,
  type Caller as CallerType,
  type RunLogsResponse,
  FUNCTIONS_API_REQUESTS,
} from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import { z } from 'zod';
import { Caller } from '../access/caller.decorator';
import { RequireScope } from '../access/route-access';
import { createZodDto } from 'nestjs-zod';
import { NoQuery } from '../http/validation';

class ListRunsQueryDto extends createZodDto(listRunsQuerySchema) {}
class RunParamsDto extends createZodDto(z.object({ id: z.string().uuid() })) {}

/**
 * The environment's action runs (newest first, filtered by integration, action, connection, status), and a
 * run's logs (`nango.log` lines of every attempt); the run id is in the trigger answer's header.
 */
@Controller('functions/runs')
export class RunsController {
  constructor(private readonly nats: NatsRequester) {}

  @Get()
  @RequireScope('environment:functions:read')
  async list(@Caller() caller: CallerType, @Query() query: ListRunsQueryDto): Promise<ActionRunsPage> {
    return this.nats.call(FUNCTIONS_API_REQUESTS.listRuns, { caller, query });
  }

  @Get(':id/logs')
  @RequireScope('environment:functions:read')
  async logs(
    @Caller() caller: CallerType,
    @Query() _query: NoQuery,
    @Param() { id }: RunParamsDto,
  ): Promise<RunLogsResponse> {
    const data = await this.nats.call(FUNCTIONS_API_REQUESTS.runLogs, { caller, id });
    return { data };
  }
}
