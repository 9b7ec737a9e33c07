import { Controller, Delete, Get, Param, Query } from '@nestjs/common';
import {
  deleteFunctionQuerySchema,
  functionParamsSchema,
  functionQuerySchema,
  listFunctionsQuerySchema,
  uniqueKeySchema,
  type Caller as CallerType,
  type DeployedFunction,
  type FunctionCode,
  type ListFunctionsResponse,
  FUNCTIONS_API_REQUESTS,
} from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import { z } from 'zod';
import { Caller } from '../access/caller.decorator';
import { RequireScope } from '../access/route-access';
import { parseParams, parseQuery } from '../http/validation';

const integrationParams = z.object({ uniqueKey: uniqueKeySchema });
const params = functionParamsSchema.extend({ uniqueKey: uniqueKeySchema });

/** The deployed functions of an integration (`listFunctions`, `getFunction`, `getFunctionCode`, `deleteFunction`). */
@Controller('integrations/:uniqueKey/functions')
export class FunctionsController {
  constructor(private readonly nats: NatsRequester) {}

  @Get()
  @RequireScope('environment:functions:read')
  async list(
    @Caller() caller: CallerType,
    @Param() rawParams: unknown,
    @Query() rawQuery: unknown,
  ): Promise<ListFunctionsResponse> {
    const { uniqueKey } = parseParams(integrationParams, rawParams);
    const query = parseQuery(listFunctionsQuerySchema, rawQuery);
    return this.nats.call(FUNCTIONS_API_REQUESTS.list, {
      caller,
      uniqueKey,
      query,
    });
  }

  @Get(':name')
  @RequireScope('environment:functions:read')
  async get(
    @Caller() caller: CallerType,
    @Param() rawParams: unknown,
    @Query() rawQuery: unknown,
  ): Promise<{ data: DeployedFunction }> {
    const { uniqueKey, name } = parseParams(params, rawParams);
    const { type } = parseQuery(functionQuerySchema, rawQuery);
    const data = await this.nats.call(FUNCTIONS_API_REQUESTS.get, {
      caller,
      uniqueKey,
      name,
      type,
    });
    return { data };
  }

  @Get(':name/code')
  @RequireScope('environment:functions:read')
  async code(
    @Caller() caller: CallerType,
    @Param() rawParams: unknown,
    @Query() rawQuery: unknown,
  ): Promise<FunctionCode> {
    const { uniqueKey, name } = parseParams(params, rawParams);
    const { type } = parseQuery(functionQuerySchema, rawQuery);
    return this.nats.call(FUNCTIONS_API_REQUESTS.code, { caller, uniqueKey, name, type });
  }

  @Delete(':name')
  @RequireScope('environment:functions:write')
  async delete(
    @Caller() caller: CallerType,
    @Param() rawParams: unknown,
    @Query() rawQuery: unknown,
  ): Promise<{ data: { success: true } }> {
    const { uniqueKey, name } = parseParams(params, rawParams);
    const { type } = parseQuery(deleteFunctionQuerySchema, rawQuery);
    const data = await this.nats.call(FUNCTIONS_API_REQUESTS.delete, {
      caller,
      uniqueKey,
      name,
      type,
    });
    return { data };
  }
}
