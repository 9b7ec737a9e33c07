import { Inject, Injectable } from '@nestjs/common';
import type { ActionRun, ActionRunsPage, Caller, ListRunsQuery } from '@switchboard/contracts';
import { Prisma, type OrchestratorDb } from '@switchboard/db';
import { ORCHESTRATOR_DB } from '../database/database.module';
import type { InvocationError } from '../functions/function-invocation-runner';

/**
 * An environment's action runs, newest first, paged by (created_at, id) so that a page boundary is
 * stable while new runs arrive; served from the (environment_id, created_at) index.
 */
@Injectable()
export class ActionRuns {
  constructor(@Inject(ORCHESTRATOR_DB) private readonly db: OrchestratorDb) {}

  async list(caller: Caller, query: ListRunsQuery): Promise<ActionRunsPage> {
    const where: Prisma.InvocationWhereInput = {
      environmentId: caller.environmentId,
      functionType: 'action',
      ...(query.integration ? { providerConfigKey: query.integration } : {}),
      ...(query.action ? { functionName: query.action } : {}),
      ...(query.connection_id ? { connectionId: query.connection_id } : {}),
      ...(query.status ? { status: query.status } : {}),
    };
    if (query.cursor) {
      const [ms, id] = query.cursor.split('_') as [string, string];
      const at = new Date(Number(ms));
      where.OR = [{ createdAt: { lt: at } }, { createdAt: at, id: { lt: id } }];
    }
    const rows = await this.db.invocation.findMany({
      where,
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      take: query.limit + 1,
      select: {
        id: true,
        functionName: true,
        providerConfigKey: true,
        connectionId: true,
        status: true,
        async: true,
        attempts: true,
        createdAt: true,
        finishedAt: true,
        error: true,
      },
    });
    const page = rows.slice(0, query.limit);
    const last = page[page.length - 1];
    return {
      data: page.map(
        (row): ActionRun => ({
          id: row.id,
          action: row.functionName,
          integration: row.providerConfigKey,
          connection_id: row.connectionId,
          status: row.status as ActionRun['status'],
          async: row.async,
          attempts: row.attempts,
          created_at: row.createdAt.toISOString(),
          finished_at: row.finishedAt?.toISOString() ?? null,
          error: outcomeError(row.error),
        }),
      ),
      next_cursor: rows.length > query.limit && last ? `${last.createdAt.getTime()}_${last.id}` : null,
    };
  }
}

/** The code and message only: a script's error payload may carry whatever the script put there. */
function outcomeError(error: Prisma.JsonValue): ActionRun['error'] {
  if (!error || typeof error !== 'object' || Array.isArray(error)) return null;
  const { code, message } = error as Partial<InvocationError>;
  return typeof code === 'string' && typeof message === 'string' ? { code, message } : null;
}
