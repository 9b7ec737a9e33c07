import { Injectable } from '@nestjs/common';
import { type ConsoleAuditRequest, CONSOLE_REQUESTS } from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import type { FastifyRequest } from 'fastify';

/**
 * Records a credentials read made through a console session (who, which environment, which connection or
 * integration) before the credentials are fetched: if the record cannot be written, the read fails. Reads
 * with a secret key are not recorded here (the key's holder is a program).
 */
@Injectable()
export class ConsoleCredentialsAudit {
  constructor(private readonly nats: NatsRequester) {}

  async record(
    request: FastifyRequest,
    action: ConsoleAuditRequest['action'],
    target: Record<string, string>,
  ): Promise<void> {
    const session = request.consoleSession;
    if (!session || !request.caller) return;
    await this.nats.call(CONSOLE_REQUESTS.audit, {
      accountId: session.accountId,
      environmentId: request.caller.environmentId,
      userId: session.user.id,
      action,
      target,
    } satisfies ConsoleAuditRequest);
  }
}
