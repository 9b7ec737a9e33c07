import { Controller, Delete, Get, HttpCode, Query, Req } from '@nestjs/common';
import { type ConnectSessionView, CONNECT_SESSION_REQUESTS } from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import type { FastifyRequest } from 'fastify';
import { RequireSession } from '../access/route-access';
import { NoQuery } from '../http/validation';
import { sessionOf } from './session-of';

/** The session itself, read and ended by the browser holding its token (`Authorization: Bearer nango_connect_session_…`). */
@Controller('connect/session')
export class CurrentConnectSessionController {
  constructor(private readonly nats: NatsRequester) {}

  @Get()
  @RequireSession()
  async get(@Req() request: FastifyRequest, @Query() _query: NoQuery): Promise<{ data: ConnectSessionView }> {
    const { caller, sessionId } = sessionOf(request);
    return {
      data: await this.nats.call(CONNECT_SESSION_REQUESTS.get, { caller, sessionId }),
    };
  }

  @Delete()
  @HttpCode(204)
  @RequireSession()
  async delete(@Req() request: FastifyRequest, @Query() _query: NoQuery): Promise<void> {
    const { caller, sessionId } = sessionOf(request);
    await this.nats.call(CONNECT_SESSION_REQUESTS.delete, { caller, sessionId });
  }
}
