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
import { createZodDto } from 'nestjs-zod';

class IntegrationParamsDto extends createZodDto(z.object({ uniqueKey: uniqueKeySchema })) {}
class FunctionParamsDto extends createZodDto(functionParamsSchema.extend({ uniqueKey: uniqueKeySchema })) {}
class ListFunctionsQueryDto extends createZodDto(listFunctionsQuerySchema) {}
class FunctionQueryDto extends createZodDto(functionQuerySchema) {}
class DeleteFunctionQueryDto extends createZodDto(deleteFunctionQuerySchema) {}

/** The deployed functions of an integration (`listFunctions`, `getFunction`, `getFunctionCode`, `deleteFunction`). */
@Controller('integrations/:uniqueKey/functions')
export class FunctionsController {
  constructor(private readonly nats: NatsRequester) {}

  @Get()
  @RequireScope('environment:functions:read')
  async list(
    @Caller() caller: CallerType,
    @Query() query: ListFunctionsQueryDto,
    @Param() { uniqueKey }: IntegrationParamsDto,
  ): Promise<ListFunctionsResponse> {
    return this.nats.call(FUNCTIONS_API_REQUESTS.list, { caller, uniqueKey, query });
  }

  @Get(':name')
  @RequireScope('environment:functions:read')
  async get(
    @Caller() caller: CallerType,
    @Query() { type }: FunctionQueryDto,
    @Param() { uniqueKey, name }: FunctionParamsDto,
  ): Promise<{ data: DeployedFunction }> {
    const data = await this.nats.call(FUNCTIONS_API_REQUESTS.get, { caller, uniqueKey, name, type });
    return { data };
  }

  @Get(':name/code')
  @RequireScope('environment:functions:read')
  async code(
    @Caller() caller: CallerType,
    @Query() { type }: FunctionQueryDto,
    @Param() { uniqueKey, name }: FunctionParamsDto,
  ): Promise<FunctionCode> {
    return this.nats.call(FUNCTIONS_API_REQUESTS.code, { caller, uniqueKey, name, type });
  }

  @Delete(':name')
  @RequireScope('environment:functions:write')
  async delete(
    @Caller() caller: CallerType,
    @Query() { type }: DeleteFunctionQueryDto,
    @Param() { uniqueKey, name }: FunctionParamsDto,
  ): Promise<{ data: { success: true } }> {
    const data = await this.nats.call(FUNCTIONS_API_REQUESTS.delete, { caller, uniqueKey, name, type });
    return { data };
  }
}
