import { Controller } from '@nestjs/common';
import {
  consoleOidcFinishRequestSchema,
  consoleOidcStartRequestSchema,
  consoleAuditRequestSchema,
  consoleSignInRequestSchema,
  consoleSignOutRequestSchema,
  consoleVerifyRequestSchema,
  createConsoleUserRequestSchema,
  deleteConsoleUserRequestSchema,
  listConsoleAuditRequestSchema,
  listConsoleUsersRequestSchema,
  updateConsoleUserRequestSchema,
  CONSOLE_OIDC_REQUESTS,
  CONSOLE_REQUESTS,
} from '@switchboard/contracts';
import { NatsHandler } from '@switchboard/messaging';
import type { z } from 'zod';
import { ConsoleOidcService } from './console-oidc.service';
import { ConsoleService } from './console.service';

@Controller()
export class ConsoleHandlers {
  constructor(
    private readonly console: ConsoleService,
    private readonly oidc: ConsoleOidcService,
  ) {}

  @NatsHandler(CONSOLE_OIDC_REQUESTS.start)
  async oidcStart(req: z.infer<typeof consoleOidcStartRequestSchema>) {
    return this.oidc.start(req);
  }

  @NatsHandler(CONSOLE_OIDC_REQUESTS.config)
  async oidcConfig() {
    return Promise.resolve(this.oidc.describe());
  }

  @NatsHandler(CONSOLE_OIDC_REQUESTS.finish)
  async oidcFinish(req: z.infer<typeof consoleOidcFinishRequestSchema>) {
    return this.oidc.finish(req);
  }

  @NatsHandler(CONSOLE_REQUESTS.signIn)
  async signIn(req: z.infer<typeof consoleSignInRequestSchema>) {
    return this.console.signIn(req.email, req.password, req.tokenHash);
  }

  @NatsHandler(CONSOLE_REQUESTS.verify)
  async verify(req: z.infer<typeof consoleVerifyRequestSchema>) {
    return this.console.verify(req.tokenHash);
  }

  @NatsHandler(CONSOLE_REQUESTS.signOut)
  async signOut(req: z.infer<typeof consoleSignOutRequestSchema>) {
    return this.console.signOut(req.tokenHash);
  }

  @NatsHandler(CONSOLE_REQUESTS.listUsers)
  async listUsers(req: z.infer<typeof listConsoleUsersRequestSchema>) {
    return this.console.listUsers(req.actor);
  }

  @NatsHandler(CONSOLE_REQUESTS.createUser)
  async createUser(req: z.infer<typeof createConsoleUserRequestSchema>) {
    return this.console.createUser(req.actor, req.body);
  }

  @NatsHandler(CONSOLE_REQUESTS.updateUser)
  async updateUser(req: z.infer<typeof updateConsoleUserRequestSchema>) {
    return this.console.updateUser(req.actor, req.id, req.body.role);
  }

  @NatsHandler(CONSOLE_REQUESTS.deleteUser)
  async deleteUser(req: z.infer<typeof deleteConsoleUserRequestSchema>) {
    return this.console.deleteUser(req.actor, req.id);
  }

  @NatsHandler(CONSOLE_REQUESTS.audit)
  async audit(req: z.infer<typeof consoleAuditRequestSchema>) {
    return this.console.audit(req);
  }

  @NatsHandler(CONSOLE_REQUESTS.listAudit)
  async listAudit(req: z.infer<typeof listConsoleAuditRequestSchema>) {
    return this.console.listAudit(req.actor, req.query);
  }
}
