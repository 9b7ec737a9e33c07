import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query } from '@nestjs/common';
import {
  createApiKeyBodySchema,
  replaceEnvironmentVariablesBodySchema,
  SwitchboardError,
  type Caller as CallerType,
  type CreatedApiKey,
  type ListedApiKey,
  type EnvironmentVariable,
  type Scope,
  API_KEY_REQUESTS,
  ENVIRONMENT_VARIABLE_REQUESTS,
} from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import { z } from 'zod';
import { Caller, CallerScopes } from '../access/caller.decorator';
import { RequireScope } from '../access/route-access';
import { createZodDto } from 'nestjs-zod';
import { NoQuery } from '../http/validation';

class ReplaceVariablesBodyDto extends createZodDto(replaceEnvironmentVariablesBodySchema) {}
class CreateApiKeyBodyDto extends createZodDto(createApiKeyBodySchema) {}
class ApiKeyParamsDto extends createZodDto(z.object({ id: z.coerce.number().int().positive() })) {}

@Controller()
export class EnvironmentController {
  constructor(private readonly nats: NatsRequester) {}

  /** A bare array, as the official client expects. */
  @Get('environment-variables')
  @RequireScope('environment:environment_variables:read')
  async listVariables(
    @Caller() caller: CallerType,
    @Query() _query: NoQuery,
  ): Promise<EnvironmentVariable[]> {
    return this.nats.call(ENVIRONMENT_VARIABLE_REQUESTS.list, { caller });
  }

  /** Replaces the whole set; answers with the set now stored. */
  @Put('environment-variables')
  @RequireScope('environment:environment_variables:write')
  async replaceVariables(
    @Caller() caller: CallerType,
    @Body() body: ReplaceVariablesBodyDto,
  ): Promise<EnvironmentVariable[]> {
    return this.nats.call(ENVIRONMENT_VARIABLE_REQUESTS.replace, { caller, body });
  }

  /** The environment's active keys, without their secrets (what a key manager needs to pick one to revoke). */
  @Get('environment/api-keys')
  @RequireScope('environment:api_keys:write')
  async listKeys(
    @Caller() caller: CallerType,
    @Query() _query: NoQuery,
  ): Promise<{ api_keys: ListedApiKey[] }> {
    return this.nats.call(API_KEY_REQUESTS.list, { caller });
  }

  @Post('environment/api-keys')
  @HttpCode(201)
  @RequireScope('environment:api_keys:write')
  async createKey(
    @Caller() caller: CallerType,
    @CallerScopes() scopes: Scope[],
    @Body() parsed: CreateApiKeyBodyDto,
  ): Promise<{ data: CreatedApiKey }> {
    // A key may only hand out what it holds itself, or `api_keys:write` alone would grant every scope.
    const beyond = parsed.scopes.filter((scope) => !scopes.includes(scope));
    if (beyond.length > 0)
      throw new SwitchboardError('forbidden', `Insufficient scope. Required: ${beyond.join(', ')}`);
    return {
      data: await this.nats.call(API_KEY_REQUESTS.create, { caller, body: parsed }),
    };
  }

  @Delete('environment/api-keys/:id')
  @RequireScope('environment:api_keys:write')
  async revokeKey(
    @Caller() caller: CallerType,
    @CallerScopes() scopes: Scope[],
    @Param() { id }: ApiKeyParamsDto,
  ): Promise<{ success: true }> {
    return this.nats.call(API_KEY_REQUESTS.revoke, { caller, scopes, id });
  }
}
