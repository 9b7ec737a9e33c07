import { Controller, Get, Query } from '@nestjs/common';
import {
  scriptsConfigQuerySchema,
  type Caller as CallerType,
  type OpenAiFunction,
  type StandardNangoConfig,
  FUNCTIONS_API_REQUESTS,
} from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import { Caller } from '../access/caller.decorator';
import { RequireScope } from '../access/route-access';
import { parseQuery } from '../http/validation';

@Controller('scripts/config')
export class ScriptsConfigController {
  constructor(private readonly nats: NatsRequester) {}

  /** `getScriptsConfig()`: every deployed function by integration, or the actions as OpenAI tools. */
  @Get()
  @RequireScope('environment:functions:read')
  async get(
    @Caller() caller: CallerType,
    @Query() query: unknown,
  ): Promise<StandardNangoConfig[] | { data: OpenAiFunction[] }> {
    const { format } = parseQuery(scriptsConfigQuerySchema, query);
    return this.nats.call(FUNCTIONS_API_REQUESTS.scriptsConfig, { caller, format });
  }
}
