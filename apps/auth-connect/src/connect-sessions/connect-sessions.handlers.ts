import { Controller } from '@nestjs/common';
import {
  connectSessionRefSchema,
  createConnectSessionRequestSchema,
  reconnectConnectSessionRequestSchema,
  verifyConnectSessionRequestSchema,
  CONNECT_SESSION_REQUESTS,
} from '@switchboard/contracts';
import { NatsHandler } from '@switchboard/messaging';
import type { z } from 'zod';
import { ConnectSessionsService } from './connect-sessions.service';

@Controller()
export class ConnectSessionsHandlers {
  constructor(private readonly sessions: ConnectSessionsService) {}

  @NatsHandler(CONNECT_SESSION_REQUESTS.create)
  async create(req: z.infer<typeof createConnectSessionRequestSchema>) {
    return this.sessions.create(req.caller, req.body);
  }

  @NatsHandler(CONNECT_SESSION_REQUESTS.reconnect)
  async reconnect(req: z.infer<typeof reconnectConnectSessionRequestSchema>) {
    return this.sessions.reconnect(req.caller, req.body);
  }

  @NatsHandler(CONNECT_SESSION_REQUESTS.verify)
  async verify(req: z.infer<typeof verifyConnectSessionRequestSchema>) {
    return this.sessions.verify(req.tokenHash);
  }

  @NatsHandler(CONNECT_SESSION_REQUESTS.get)
  async get(req: z.infer<typeof connectSessionRefSchema>) {
    return this.sessions.view(req.caller, req.sessionId);
  }

  @NatsHandler(CONNECT_SESSION_REQUESTS.delete)
  async delete(req: z.infer<typeof connectSessionRefSchema>) {
    return this.sessions.delete(req.caller, req.sessionId);
  }
}
