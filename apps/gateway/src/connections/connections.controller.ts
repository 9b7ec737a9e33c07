import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Req } from '@nestjs/common';
import {
  connectionKeyQuerySchema,
  connectionParamsSchema,
  getConnectionQuerySchema,
  importConnectionBodySchema,
  listConnectionsQuerySchema,
  patchConnectionBodySchema,
  SwitchboardError,
  type ApiPublicConnection,
  type ApiPublicConnectionFull,
  type Caller as CallerType,
  type Scope,
  CONNECTIONS_API_REQUESTS,
} from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import type { FastifyRequest } from 'fastify';
import { ConsoleCredentialsAudit } from '../console/console-auth.audit';
import { Caller, CallerScopes } from '../access/caller.decorator';
import { RequireScope } from '../access/route-access';
import { createZodDto } from 'nestjs-zod';

class ListConnectionsQueryDto extends createZodDto(listConnectionsQuerySchema) {}
class ImportConnectionBodyDto extends createZodDto(importConnectionBodySchema) {}
class ConnectionParamsDto extends createZodDto(connectionParamsSchema) {}
class GetConnectionQueryDto extends createZodDto(getConnectionQuerySchema) {}
class ConnectionKeyQueryDto extends createZodDto(connectionKeyQuerySchema) {}
/** The client may send no body at all: nothing to change. */
class PatchConnectionBodyDto extends createZodDto(patchConnectionBodySchema.default({})) {}

const READ_CREDENTIALS: Scope = 'environment:connections:read_credentials';
/** Nango answers every connection when no limit is given. */
const DEFAULT_LIST_LIMIT = 10_000;
/**
 * A credentials read may wait for a token refresh, possibly one another replica started and then lost
 * (bounded by the vault's lease and refresh timeout), so it gets longer than the usual NATS timeout.
 */
const CREDENTIALS_READ_TIMEOUT_MS = 60_000;

@Controller('connections')
export class ConnectionsController {
  constructor(
    private readonly nats: NatsRequester,
    private readonly audit: ConsoleCredentialsAudit,
  ) {}

  @Get()
  @RequireScope('environment:connections:read')
  async list(
    @Caller() caller: CallerType,
    @Query() q: ListConnectionsQueryDto,
  ): Promise<{ connections: ApiPublicConnection[] }> {
    return this.nats.call(CONNECTIONS_API_REQUESTS.list, {
      caller,
      filters: {
        connectionId: q.connectionId,
        search: q.search,
        endUserId: q.endUserId,
        endUserOrganizationId: q.endUserOrganizationId,
        integrationIds: q.integrationId,
        tags: q.tags,
        limit: q.limit ?? DEFAULT_LIST_LIMIT,
        page: q.page ?? 0,
      },
    });
  }

  /** Imports a connection whose credentials the caller already holds. */
  @Post()
  @HttpCode(201)
  @RequireScope('environment:connections:write')
  async import(
    @Caller() caller: CallerType,
    @CallerScopes() scopes: Scope[],
    @Body() body: ImportConnectionBodyDto,
  ): Promise<ApiPublicConnectionFull> {
    return this.nats.call(CONNECTIONS_API_REQUESTS.import, {
      caller,
      body,
      includeCredentials: scopes.includes(READ_CREDENTIALS),
    });
  }

  @Get(':connectionId')
  @RequireScope('environment:connections:read')
  async get(
    @Caller() caller: CallerType,
    @CallerScopes() scopes: Scope[],
    @Req() request: FastifyRequest,
    @Query() q: GetConnectionQueryDto,
    @Param() { connectionId }: ConnectionParamsDto,
  ): Promise<ApiPublicConnectionFull> {
    const includeCredentials = scopes.includes(READ_CREDENTIALS);
    const asks = {
      force_refresh: q.force_refresh,
      refresh_token: q.refresh_token,
      refresh_github_app_jwt_token: q.refresh_github_app_jwt_token,
    };
    if (!includeCredentials && Object.values(asks).some(Boolean)) {
      throw new SwitchboardError('forbidden', `Insufficient scope. Required: ${READ_CREDENTIALS}`);
    }
    if (includeCredentials) {
      await this.audit.record(request, 'connection.read_credentials', {
        connection_id: connectionId,
        ...(q.provider_config_key ? { provider_config_key: q.provider_config_key } : {}),
      });
    }
    return this.nats.call(
      CONNECTIONS_API_REQUESTS.get,
      {
        caller,
        connectionId,
        providerConfigKey: q.provider_config_key,
        includeCredentials,
        includeRefreshToken: q.refresh_token ?? false,
        forceRefresh: q.force_refresh ?? false,
        refreshGithubAppJwtToken: q.refresh_github_app_jwt_token ?? false,
      },
      includeCredentials ? { timeoutMs: CREDENTIALS_READ_TIMEOUT_MS } : {},
    );
  }

  /** Tags, end user and webhook URL override; an empty `webhook_url_override` clears it. */
  @Patch(':connectionId')
  @RequireScope('environment:connections:write')
  async patch(
    @Caller() caller: CallerType,
    @Body() body: PatchConnectionBodyDto,
    @Query() { provider_config_key }: ConnectionKeyQueryDto,
    @Param() { connectionId }: ConnectionParamsDto,
  ): Promise<{ success: true }> {
    return this.nats.call(CONNECTIONS_API_REQUESTS.patch, {
      caller,
      connectionId,
      providerConfigKey: provider_config_key,
      body,
    });
  }

  @Delete(':connectionId')
  @RequireScope('environment:connections:write')
  async delete(
    @Caller() caller: CallerType,
    @Query() { provider_config_key }: ConnectionKeyQueryDto,
    @Param() { connectionId }: ConnectionParamsDto,
  ): Promise<{ success: true }> {
    return this.nats.call(CONNECTIONS_API_REQUESTS.delete, {
      caller,
      connectionId,
      providerConfigKey: provider_config_key,
    });
  }
}
