import { Body, Controller, HttpCode, Post, Query } from '@nestjs/common';
import {
  createConnectSessionBodySchema,
  reconnectConnectSessionBodySchema,
  type Caller as CallerType,
  type ConnectSessionCreated,
  CONNECT_SESSION_REQUESTS,
} from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import { Caller } from '../access/caller.decorator';
import { RequireScope } from '../access/route-access';
import { createZodDto } from 'nestjs-zod';
import { NoQuery } from '../http/validation';

class CreateConnectSessionBodyDto extends createZodDto(createConnectSessionBodySchema) {}
class ReconnectConnectSessionBodyDto extends createZodDto(reconnectConnectSessionBodySchema) {}

/** `POST /connect/sessions` and its reconnect variant: a customer's backend asks for a session token. */
@Controller('connect/sessions')
export class ConnectSessionsController {
  constructor(private readonly nats: NatsRequester) {}

  @Post()
  @HttpCode(201)
  @RequireScope('environment:connect_sessions:write')
  async create(
    @Caller() caller: CallerType,
    @Body() body: CreateConnectSessionBodyDto,
    @Query() _query: NoQuery,
  ): Promise<{ data: ConnectSessionCreated }> {
    return { data: await this.nats.call(CONNECT_SESSION_REQUESTS.create, { caller, body }) };
  }

  @Post('reconnect')
  @HttpCode(201)
  @RequireScope('environment:connect_sessions:write')
  async reconnect(
    @Caller() caller: CallerType,
    @Body() body: ReconnectConnectSessionBodyDto,
    @Query() _query: NoQuery,
  ): Promise<{ data: ConnectSessionCreated }> {
    return { data: await this.nats.call(CONNECT_SESSION_REQUESTS.reconnect, { caller, body }) };
  }
}
