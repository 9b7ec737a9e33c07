import { Controller, Inject } from '@nestjs/common';
import {
  checkpointClearRequestSchema,
  checkpointGetRequestSchema,
  checkpointSaveRequestSchema,
  FUNCTION_HOST_SUBJECTS,
  type CheckpointReply,
} from '@switchboard/contracts';
import type { OrchestratorDb, Prisma } from '@switchboard/db';
import { NatsHandler } from '@switchboard/messaging';
import type { z } from 'zod';
import { ORCHESTRATOR_DB } from '../database/database.module';

type Scope = z.infer<typeof checkpointGetRequestSchema>;

/** `nango.getCheckpoint/saveCheckpoint/clearCheckpoint`, scoped to the run's environment (from its caller). */
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

  @NatsHandler(FUNCTION_HOST_SUBJECTS.checkpointGet, checkpointGetRequestSchema)
  async get(scope: Scope): Promise<CheckpointReply> {
    const row = await this.db.functionCheckpoint.findUnique({ where: this.key(scope) });
    return { checkpoint: (row?.checkpoint as CheckpointReply['checkpoint']) ?? null };
  }

  @NatsHandler(FUNCTION_HOST_SUBJECTS.checkpointSave, checkpointSaveRequestSchema)
  async save(request: z.infer<typeof checkpointSaveRequestSchema>): Promise<CheckpointReply> {
    const checkpoint = request.checkpoint as Prisma.InputJsonObject;
    const key = this.key(request).environmentId_providerConfigKey_connectionId_functionName_variant;
    await this.db.functionCheckpoint.upsert({
      where: this.key(request),
      create: { ...key, checkpoint },
      update: { checkpoint },
    });
    return { checkpoint: request.checkpoint };
  }

  @NatsHandler(FUNCTION_HOST_SUBJECTS.checkpointClear, checkpointClearRequestSchema)
  async clear(scope: Scope): Promise<CheckpointReply> {
    await this.db.functionCheckpoint.deleteMany({
      where: this.key(scope).environmentId_providerConfigKey_connectionId_functionName_variant,
    });
    return { checkpoint: null };
  }
}
