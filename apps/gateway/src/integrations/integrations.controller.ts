import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Req } from '@nestjs/common';
import {
  createIntegrationBodySchema,
  getIntegrationQuerySchema,
  SwitchboardError,
  uniqueKeySchema,
  updateIntegrationBodySchema,
  type Caller as CallerType,
  type Integration,
  type Scope,
  INTEGRATION_REQUESTS,
} from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import { z } from 'zod';
import { Caller, CallerScopes } from '../access/caller.decorator';
import type { FastifyRequest } from 'fastify';
import { ConsoleCredentialsAudit } from '../console/console-auth.audit';
import { RequireScope, RequireScopeOrSession } from '../access/route-access';
import { createZodDto } from 'nestjs-zod';
import { NoQuery } from '../http/validation';

class IntegrationParamsDto extends createZodDto(z.object({ uniqueKey: uniqueKeySchema })) {}
class GetIntegrationQueryDto extends createZodDto(getIntegrationQuerySchema) {}
class CreateIntegrationBodyDto extends createZodDto(createIntegrationBodySchema) {}
class UpdateIntegrationBodyDto extends createZodDto(updateIntegrationBodySchema) {}

@Controller('integrations')
export class IntegrationsController {
  constructor(
    private readonly nats: NatsRequester,
    private readonly audit: ConsoleCredentialsAudit,
  ) {}

  /** Also what the connect page reads with a session token: then only the session's allowed integrations. */
  @Get()
  @RequireScopeOrSession('environment:integrations:read')
  async list(
    @Caller() caller: CallerType,
    @Req() request: FastifyRequest,
    @Query() _query: NoQuery,
  ): Promise<{ data: Integration[] }> {
    const data = await this.nats.call(INTEGRATION_REQUESTS.list, { caller });
    const allowed = request.connectSession?.allowedIntegrations;
    return { data: allowed ? data.filter((integration) => allowed.includes(integration.unique_key)) : data };
  }

  @Post()
  @HttpCode(200)
  @RequireScope('environment:integrations:write')
  async create(
    @Caller() caller: CallerType,
    @Body() body: CreateIntegrationBodyDto,
  ): Promise<{ data: Integration }> {
    return { data: await this.nats.call(INTEGRATION_REQUESTS.create, { caller, body }) };
  }

  @Get(':uniqueKey')
  @RequireScope('environment:integrations:read')
  async get(
    @Caller() caller: CallerType,
    @CallerScopes() scopes: Scope[],
    @Req() request: FastifyRequest,
    @Query() query: GetIntegrationQueryDto,
    @Param() { uniqueKey }: IntegrationParamsDto,
  ): Promise<{ data: Integration }> {
    const include = query.include ?? [];
    const credentials = include.includes('credentials');
    if (credentials && !scopes.includes('environment:integrations:read_credentials')) {
      throw new SwitchboardError(
        'forbidden',
        'Insufficient scope. Required: environment:integrations:read_credentials',
      );
    }
    if (credentials) {
      await this.audit.record(request, 'integration.read_credentials', { unique_key: uniqueKey });
    }
    const data = await this.nats.call(INTEGRATION_REQUESTS.get, {
      caller,
      uniqueKey,
      include: { webhook: include.includes('webhook'), credentials },
    });
    return { data };
  }

  @Patch(':uniqueKey')
  @RequireScope('environment:integrations:write')
  async update(
    @Caller() caller: CallerType,
    @Body() body: UpdateIntegrationBodyDto,
    @Param() { uniqueKey }: IntegrationParamsDto,
  ): Promise<{ data: Integration }> {
    return { data: await this.nats.call(INTEGRATION_REQUESTS.update, { caller, uniqueKey, body }) };
  }

  @Delete(':uniqueKey')
  @RequireScope('environment:integrations:write')
  async delete(
    @Caller() caller: CallerType,
    @Param() { uniqueKey }: IntegrationParamsDto,
  ): Promise<{ success: true }> {
    return this.nats.call(INTEGRATION_REQUESTS.delete, { caller, uniqueKey });
  }
}
