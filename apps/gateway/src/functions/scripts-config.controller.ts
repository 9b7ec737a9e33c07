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
import { createZodDto } from 'nestjs-zod';

class ScriptsConfigQueryDto extends createZodDto(scriptsConfigQuerySchema) {}

@Controller('scripts/config')
export class ScriptsConfigController {
  constructor(private readonly nats: NatsRequester) {}

  /** `getScriptsConfig()`: every deployed function by integration, or the actions as OpenAI tools. */
  @Get()
  @RequireScope('environment:functions:read')
  async get(
    @Caller() caller: CallerType,
    @Query() { format }: ScriptsConfigQueryDto,
  ): Promise<StandardNangoConfig[] | { data: OpenAiFunction[] }> {
    return this.nats.call(FUNCTIONS_API_REQUESTS.scriptsConfig, { caller, format });
  }
}
