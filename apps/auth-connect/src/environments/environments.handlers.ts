import { Controller, Inject } from '@nestjs/common';
import {
  type ResolveEnvironmentRequest,
  type ResolvedEnvironment,
  ENVIRONMENT_REQUESTS,
} from '@switchboard/contracts';
import type { AuthDb } from '@switchboard/db';
import { NatsHandler } from '@switchboard/messaging';
import { AuthConnectError } from '../auth-connect.errors';
import { AUTH_DB } from '../database/database.module';

/**
 * Internal bus only: an environment's identity by id or by public UUID, for services that hold one and
 * need the other (the webhook relay routes `/webhook/:environmentUuid/...` and names the environment in
 * auth webhooks).
 */
@Controller()
export class EnvironmentsHandlers {
  constructor(@Inject(AUTH_DB) private readonly db: AuthDb) {}

  @NatsHandler(ENVIRONMENT_REQUESTS.resolve)
  async resolve(request: ResolveEnvironmentRequest): Promise<ResolvedEnvironment> {
    const row = await this.db.environment.findUnique({
      where: 'id' in request ? { id: request.id } : { uuid: request.uuid },
      select: { id: true, uuid: true, name: true, accountId: true },
    });
    if (!row) throw new AuthConnectError('unknown_environment', 'No such environment');
    return row;
  }
}
