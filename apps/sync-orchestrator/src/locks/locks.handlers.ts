import { Controller, Inject } from '@nestjs/common';
import {
  lockAcquireRequestSchema,
  lockReleaseAllRequestSchema,
  lockReleaseRequestSchema,
  type LockReply,
  FUNCTION_HOST_REQUESTS,
} from '@switchboard/contracts';
import type { OrchestratorDb } from '@switchboard/db';
import { NatsHandler } from '@switchboard/messaging';
import type { z } from 'zod';
import { ORCHESTRATOR_DB } from '../database/database.module';

/**
 * `nango.tryAcquireLock` / `releaseLock` / `releaseAllLocks`: cross-run locks of a connection, in
 * `orchestrator.function_locks`. One statement each, so two runs racing for a key cannot both win: the
 * insert takes a free key, and on conflict takes it over only when its holder's TTL ran out.
 */
@Controller()
export class LocksHandlers {
  constructor(@Inject(ORCHESTRATOR_DB) private readonly db: OrchestratorDb) {}

  @NatsHandler(FUNCTION_HOST_REQUESTS.lockAcquire)
  async acquire(request: z.infer<typeof lockAcquireRequestSchema>): Promise<LockReply> {
    const rows = await this.db.$queryRaw<{ owner: string }[]>`
      INSERT INTO orchestrator.function_locks
        (environment_id, provider_config_key, connection_id, key, owner, expires_at)
      VALUES (${request.caller.environmentId}, ${request.providerConfigKey}, ${request.connectionId},
        ${request.key}, ${request.owner}, now() + make_interval(secs => ${request.ttlMs / 1000}))
      ON CONFLICT (environment_id, provider_config_key, connection_id, key) DO UPDATE
        SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
        WHERE orchestrator.function_locks.expires_at <= now()
      RETURNING owner`;
    return { ok: rows.length === 1 };
  }

  @NatsHandler(FUNCTION_HOST_REQUESTS.lockRelease)
  async release(request: z.infer<typeof lockReleaseRequestSchema>): Promise<LockReply> {
    const { count } = await this.db.functionLock.deleteMany({
      where: { ...this.scope(request), key: request.key, owner: request.owner },
    });
    return { ok: count > 0 };
  }

  @NatsHandler(FUNCTION_HOST_REQUESTS.lockReleaseAll)
  async releaseAll(request: z.infer<typeof lockReleaseAllRequestSchema>): Promise<LockReply> {
    await this.db.functionLock.deleteMany({ where: { ...this.scope(request), owner: request.owner } });
    return { ok: true };
  }

  private scope(request: z.infer<typeof lockReleaseAllRequestSchema>) {
    return {
      environmentId: request.caller.environmentId,
      providerConfigKey: request.providerConfigKey,
      connectionId: request.connectionId,
    };
  }
}
