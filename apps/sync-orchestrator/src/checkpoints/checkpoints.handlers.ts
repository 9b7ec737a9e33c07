import { Controller, Inject } from '@nestjs/common';
import {
  checkpointClearRequestSchema,
  checkpointGetRequestSchema,
  checkpointSaveRequestSchema,
  type CheckpointReply,
  FUNCTION_HOST_REQUESTS,
} from '@switchboard/contracts';
import type { OrchestratorDb, Prisma } from '@switchboard/db';
import { NatsHandler } from '@switchboard/messaging';
import type { z } from 'zod';
import { ORCHESTRATOR_DB } from '../database/database.module';
import { holdSyncRun } from '../syncs/sync-run-fence';

type Scope = z.infer<typeof checkpointGetRequestSchema>;

/**
 * `nango.getCheckpoint/saveCheckpoint/clearCheckpoint`, scoped to the run's environment (from its caller).
 * A sync run's save and clear name the run: refused (`sync_run_superseded`) once it is not the current one.
 */
@Controller()
export class CheckpointsHandlers {
  constructor(@Inject(ORCHESTRATOR_DB) private readonly db: OrchestratorDb) {}

  private key(scope: Scope) {
    return {
      environmentId_providerConfigKey_connectionId_functionName_variant: {
        environmentId: scope.caller.environmentId,
        providerConfigKey: scope.providerConfigKey,
        connectionId: scope.connectionId,
        functionName: scope.functionName,
        variant: scope.variant,
      },
    };
  }

  @NatsHandler(FUNCTION_HOST_REQUESTS.checkpointGet)
  async get(scope: Scope): Promise<CheckpointReply> {
    const row = await this.db.functionCheckpoint.findUnique({ where: this.key(scope) });
    return { checkpoint: (row?.checkpoint as CheckpointReply['checkpoint']) ?? null };
  }

  @NatsHandler(FUNCTION_HOST_REQUESTS.checkpointSave)
  async save(request: z.infer<typeof checkpointSaveRequestSchema>): Promise<CheckpointReply> {
    const checkpoint = request.checkpoint as Prisma.InputJsonObject;
    const key = this.key(request).environmentId_providerConfigKey_connectionId_functionName_variant;
    await this.fenced(request, (tx) =>
      tx.functionCheckpoint.upsert({
        where: this.key(request),
        create: { ...key, checkpoint },
        update: { checkpoint },
      }),
    );
    return { checkpoint: request.checkpoint };
  }

  @NatsHandler(FUNCTION_HOST_REQUESTS.checkpointClear)
  async clear(request: z.infer<typeof checkpointClearRequestSchema>): Promise<CheckpointReply> {
    await this.fenced(request, (tx) =>
      tx.functionCheckpoint.deleteMany({
        where: this.key(request).environmentId_providerConfigKey_connectionId_functionName_variant,
      }),
    );
    return { checkpoint: null };
  }

  /** A sync run's write goes through only while its run is the current one (in one transaction with the check). */
  private async fenced(
    request: Scope & { runId?: string | undefined; attempt?: number | undefined },
    write: (tx: Pick<Prisma.TransactionClient, 'functionCheckpoint'>) => Promise<unknown>,
  ): Promise<void> {
    const { runId } = request;
    if (!runId) {
      await write(this.db);
      return;
    }
    await this.db.$transaction(async (tx) => {
      await holdSyncRun(
        tx,
        { runId, attempt: request.attempt },
        {
          environmentId: request.caller.environmentId,
          providerConfigKey: request.providerConfigKey,
          connectionId: request.connectionId,
          variant: request.variant,
          syncName: request.functionName,
        },
      );
      await write(tx);
    });
  }
}
