import { Controller } from '@nestjs/common';
import {
  listEnvironmentVariablesRequestSchema,
  replaceEnvironmentVariablesRequestSchema,
  ENVIRONMENT_VARIABLE_REQUESTS,
} from '@switchboard/contracts';
import { NatsHandler } from '@switchboard/messaging';
import type { z } from 'zod';
import { EnvironmentVariablesService } from './environment-variables.service';

@Controller()
export class EnvironmentVariablesHandlers {
  constructor(private readonly variables: EnvironmentVariablesService) {}

  @NatsHandler(ENVIRONMENT_VARIABLE_REQUESTS.list)
  async list(req: z.infer<typeof listEnvironmentVariablesRequestSchema>) {
    return this.variables.list(req.caller);
  }

  @NatsHandler(ENVIRONMENT_VARIABLE_REQUESTS.replace)
  async replace(req: z.infer<typeof replaceEnvironmentVariablesRequestSchema>) {
    return this.variables.replace(req.caller, req.body.variables);
  }
}
