import { Inject, Injectable } from '@nestjs/common';
import type { FunctionType } from '@switchboard/contracts';
import type { OrchestratorDb, Prisma } from '@switchboard/db';
import { ORCHESTRATOR_DB } from '../database/database.module';
import { WITH_VERSION, type FunctionWithVersion } from './function-config';

export interface FunctionFilter {
  providerConfigKey?: string;
  providerConfigKeys?: string[];
  type?: FunctionType;
  name?: string;
  search?: string;
  event?: string;
}

@Injectable()
export class FunctionsRepository {
  constructor(@Inject(ORCHESTRATOR_DB) private readonly db: OrchestratorDb) {}

  private where(environmentId: number, filter: FunctionFilter): Prisma.DeployedFunctionWhereInput {
    return {
      environmentId,
      ...(filter.providerConfigKey !== undefined ? { providerConfigKey: filter.providerConfigKey } : {}),
      ...(filter.providerConfigKeys ? { providerConfigKey: { in: filter.providerConfigKeys } } : {}),
      ...(filter.type ? { type: filter.type } : {}),
      ...(filter.name !== undefined ? { name: filter.name } : {}),
      ...(filter.event !== undefined ? { event: filter.event } : {}),
      ...(filter.search ? { name: { contains: filter.search, mode: 'insensitive' as const } } : {}),
    };
  }

  find(environmentId: number, filter: FunctionFilter): Promise<FunctionWithVersion[]> {
    return this.db.deployedFunction.findMany({
      where: this.where(environmentId, filter),
      include: WITH_VERSION,
      orderBy: [{ providerConfigKey: 'asc' }, { type: 'asc' }, { name: 'asc' }],
    });
  }

  /** The bundle of one of the function's versions, by its hash, if the function is in the environment. */
  async bundle(environmentId: number, functionId: number, sha256: string): Promise<string | undefined> {
    if (!Number.isSafeInteger(functionId)) return undefined;
    const version = await this.db.functionVersion.findFirst({
      where: { functionId, sha256, function: { environmentId } },
      select: { codeJs: true },
    });
    return version?.codeJs;
  }

  /** The code shown for a function's version: the TypeScript the CLI sent, else the compiled bundle. */
  async code(versionId: string): Promise<string> {
    const version = await this.db.functionVersion.findUnique({
      where: { id: versionId },
      select: { codeJs: true, codeTs: true },
    });
    return version?.codeTs ?? version?.codeJs ?? '';
  }

  async page(
    environmentId: number,
    filter: FunctionFilter,
    page: number,
    limit: number,
  ): Promise<{ rows: FunctionWithVersion[]; total: number }> {
    const where = this.where(environmentId, filter);
    const [rows, total] = await Promise.all([
      this.db.deployedFunction.findMany({
        where,
        include: WITH_VERSION,
        orderBy: [{ name: 'asc' }, { type: 'asc' }],
        skip: page * limit,
        take: limit,
      }),
      this.db.deployedFunction.count({ where }),
    ]);
    return { rows, total };
  }

  async delete(environmentId: number, providerConfigKey: string, type: FunctionType, name: string) {
    const { count } = await this.db.deployedFunction.deleteMany({
      where: { environmentId, providerConfigKey, type, name },
    });
    return count > 0;
  }
}
