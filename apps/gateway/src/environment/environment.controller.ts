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
import { parseBody, parseNoQuery, parseParams } from '../http/validation';

@Controller()
export class EnvironmentController {
  constructor(private readonly nats: NatsRequester) {}

  /** A bare array, as the official client expects. */
  @Get('environment-variables')
  @RequireScope('environment:environment_variables:read')
  async listVariables(@Caller() caller: CallerType, @Query() query: unknown): Promise<EnvironmentVariable[]> {
    parseNoQuery(query);
    return this.nats.call(ENVIRONMENT_VARIABLE_REQUESTS.list, { caller });
  }

  /** Replaces the whole set; answers with the set now stored. */
  @Put('environment-variables')
  @RequireScope('environment:environment_variables:write')
  async replaceVariables(
    @Caller() caller: CallerType,
    @Body() body: unknown,
  ): Promise<EnvironmentVariable[]> {
    const parsed = parseBody(replaceEnvironmentVariablesBodySchema, body);
    return this.nats.call(ENVIRONMENT_VARIABLE_REQUESTS.replace, {
      caller,
      body: parsed,
    });
  }

  /** The environment's active keys, without their secrets (what a key manager needs to pick one to revoke). */
  @Get('environment/api-keys')
  @RequireScope('environment:api_keys:write')
  async listKeys(
    @Caller() caller: CallerType,
    @Query() query: unknown,
  ): Promise<{ api_keys: ListedApiKey[] }> {
    parseNoQuery(query);
    return this.nats.call(API_KEY_REQUESTS.list, { caller });
  }

  @Post('environment/api-keys')
  @HttpCode(201)
  @RequireScope('environment:api_keys:write')
  async createKey(
    @Caller() caller: CallerType,
    @CallerScopes() scopes: Scope[],
    @Body() body: unknown,
  ): Promise<{ data: CreatedApiKey }> {
    const parsed = parseBody(createApiKeyBodySchema, body);
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
    @Param() params: unknown,
  ): Promise<{ success: true }> {
    const { id } = parseParams(z.object({ id: z.coerce.number().int().positive() }), params);
    return this.nats.call(API_KEY_REQUESTS.revoke, { caller, scopes, id });
  }
}
