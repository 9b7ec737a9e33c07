import { Controller } from '@nestjs/common';
import {
  CONSOLE_OIDC_SUBJECTS,
  CONSOLE_SUBJECTS,
  consoleOidcFinishRequestSchema,
  consoleOidcStartRequestSchema,
  consoleAuditRequestSchema,
  consoleConfigRequestSchema,
  consoleSignInRequestSchema,
  consoleSignOutRequestSchema,
  consoleVerifyRequestSchema,
  createConsoleUserRequestSchema,
  deleteConsoleUserRequestSchema,
  listConsoleAuditRequestSchema,
  listConsoleUsersRequestSchema,
  updateConsoleUserRequestSchema,
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

  @NatsHandler(CONSOLE_OIDC_SUBJECTS.start, consoleOidcStartRequestSchema)
  async oidcStart(req: z.infer<typeof consoleOidcStartRequestSchema>) {
    return this.oidc.start(req);
  }

  @NatsHandler(CONSOLE_OIDC_SUBJECTS.config, consoleConfigRequestSchema)
  async oidcConfig() {
    return Promise.resolve(this.oidc.describe());
  }

  @NatsHandler(CONSOLE_OIDC_SUBJECTS.finish, consoleOidcFinishRequestSchema)
  async oidcFinish(req: z.infer<typeof consoleOidcFinishRequestSchema>) {
    return this.oidc.finish(req);
  }

  @NatsHandler(CONSOLE_SUBJECTS.signIn, consoleSignInRequestSchema)
  async signIn(req: z.infer<typeof consoleSignInRequestSchema>) {
    return this.console.signIn(req.email, req.password, req.tokenHash);
  }

  @NatsHandler(CONSOLE_SUBJECTS.verify, consoleVerifyRequestSchema)
  async verify(req: z.infer<typeof consoleVerifyRequestSchema>) {
    return this.console.verify(req.tokenHash);
  }

  @NatsHandler(CONSOLE_SUBJECTS.signOut, consoleSignOutRequestSchema)
  async signOut(req: z.infer<typeof consoleSignOutRequestSchema>) {
    return this.console.signOut(req.tokenHash);
  }

  @NatsHandler(CONSOLE_SUBJECTS.listUsers, listConsoleUsersRequestSchema)
  async listUsers(req: z.infer<typeof listConsoleUsersRequestSchema>) {
    return this.console.listUsers(req.actor);
  }

  @NatsHandler(CONSOLE_SUBJECTS.createUser, createConsoleUserRequestSchema)
  async createUser(req: z.infer<typeof createConsoleUserRequestSchema>) {
    return this.console.createUser(req.actor, req.body);
  }

  @NatsHandler(CONSOLE_SUBJECTS.updateUser, updateConsoleUserRequestSchema)
  async updateUser(req: z.infer<typeof updateConsoleUserRequestSchema>) {
    return this.console.updateUser(req.actor, req.id, req.body.role);
  }

  @NatsHandler(CONSOLE_SUBJECTS.deleteUser, deleteConsoleUserRequestSchema)
  async deleteUser(req: z.infer<typeof deleteConsoleUserRequestSchema>) {
    return this.console.deleteUser(req.actor, req.id);
  }

  @NatsHandler(CONSOLE_SUBJECTS.audit, consoleAuditRequestSchema)
  async audit(req: z.infer<typeof consoleAuditRequestSchema>) {
    return this.console.audit(req);
  }

  @NatsHandler(CONSOLE_SUBJECTS.listAudit, listConsoleAuditRequestSchema)
  async listAudit(req: z.infer<typeof listConsoleAuditRequestSchema>) {
    return this.console.listAudit(req.actor, req.query);
  }
}
