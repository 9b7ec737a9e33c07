import { Controller, Delete, Get, HttpCode, Query, Req } from '@nestjs/common';
import { CONNECT_SESSION_SUBJECTS, type ConnectSessionView } from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { RequireSession } from '../access/route-access';
import { parseQuery } from '../http/validation';
import { sessionOf } from './session-of';

const noQuery = z.object({}).strict();

/** The session itself, read and ended by the browser holding its token (`Authorization: Bearer nango_connect_session_…`). */
@Controller('connect/session')
export class CurrentConnectSessionController {
  constructor(private readonly nats: NatsRequester) {}

  @Get()
  @RequireSession()
  async get(@Req() request: FastifyRequest, @Query() query: unknown): Promise<{ data: ConnectSessionView }> {
    parseQuery(noQuery, query);
    const { caller, sessionId } = sessionOf(request);
    return {
      data: await this.nats.request<ConnectSessionView>(CONNECT_SESSION_SUBJECTS.get, { caller, sessionId }),
    };
  }

  @Delete()
  @HttpCode(204)
  @RequireSession()
  async delete(@Req() request: FastifyRequest, @Query() query: unknown): Promise<void> {
    parseQuery(noQuery, query);
    const { caller, sessionId } = sessionOf(request);
    await this.nats.request(CONNECT_SESSION_SUBJECTS.delete, { caller, sessionId });
  }
}
