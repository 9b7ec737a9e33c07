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
import { parseBody, parseNoQuery } from '../http/validation';

/** `POST /connect/sessions` and its reconnect variant: a customer's backend asks for a session token. */
@Controller('connect/sessions')
export class ConnectSessionsController {
  constructor(private readonly nats: NatsRequester) {}

  @Post()
  @HttpCode(201)
  @RequireScope('environment:connect_sessions:write')
  async create(
    @Caller() caller: CallerType,
    @Query() query: unknown,
    @Body() body: unknown,
  ): Promise<{ data: ConnectSessionCreated }> {
    parseNoQuery(query);
    const parsed = parseBody(createConnectSessionBodySchema, body);
    return {
      data: await this.nats.call(CONNECT_SESSION_REQUESTS.create, {
        caller,
        body: parsed,
      }),
    };
  }

  @Post('reconnect')
  @HttpCode(201)
  @RequireScope('environment:connect_sessions:write')
  async reconnect(
    @Caller() caller: CallerType,
    @Query() query: unknown,
    @Body() body: unknown,
  ): Promise<{ data: ConnectSessionCreated }> {
    parseNoQuery(query);
    const parsed = parseBody(reconnectConnectSessionBodySchema, body);
    return {
      data: await this.nats.call(CONNECT_SESSION_REQUESTS.reconnect, {
        caller,
        body: parsed,
      }),
    };
  }
}
