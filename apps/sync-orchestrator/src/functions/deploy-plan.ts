import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import {
  FUNCTION_MODULES,
  SwitchboardError,
  UNSUPPORTED_FUNCTION_MODULES,
  requiredModules,
  type Caller,
  type DeployBody,
  type DeployMode,
  type FieldError,
  type FunctionType,
  type OnEventType,
} from '@switchboard/contracts';
import type { OrchestratorDb, Prisma } from '@switchboard/db';
import { ORCHESTRATOR_DB } from '../database/database.module';
import { parseSyncInterval } from '../syncs/frequency';
import {
  configOfFlow,
  configOfOnEvent,
  VERSION_WITHOUT_CODE,
  type FunctionWithVersion,
  type StoredConfig,
} from './function-config';
import { IntegrationDirectory } from './integration-directory';

/** One function as the deploy wants it to be. */
export interface Desired {
  providerConfigKey: string;
  type: FunctionType;
  name: string;
  event: OnEventType | null;
  js: string;
  ts: string | null;
  version: string | undefined;
  config: StoredConfig;
  models: string[];
}

/** A deployed function as a deploy compares it: with its TypeScript (a change of it alone is a new version). */
export type ExistingFunction = Omit<FunctionWithVersion, 'currentVersion'> & {
  currentVersion: (NonNullable<FunctionWithVersion['currentVersion']> & { codeTs: string | null }) | null;
};

export interface Plan {
  mode: DeployMode;
  desired: Desired[];
  existing: ExistingFunction[];
  toDelete: ExistingFunction[];
}

export const keyOf = (f: { providerConfigKey: string; type: string; name: string }) =>
  `${f.providerConfigKey}\u0000${f.type}\u0000${f.name}`;
export const sha256 = (code: string) => createHash('sha256').update(code).digest('hex');

/** A deploy's plan, for `confirm` (what it would change) and `apply` (what it stores). */
@Injectable()
export class DeployPlanner {
  constructor(
    @Inject(ORCHESTRATOR_DB) private readonly db: OrchestratorDb,
    private readonly integrations: IntegrationDirectory,
  ) {}

  /**
   * What the deploy wants (its functions, validated) beside what is stored, and what it would delete. With
   * `tx`, read inside the deploy's transaction.
   */
  async plan(caller: Caller, body: DeployBody, tx?: Prisma.TransactionClient): Promise<Plan> {
    const mode: DeployMode = body.deployMode ?? (body.singleDeployMode ? 'single' : 'all');
    const desired: Desired[] = [
      ...body.flowConfigs.map(
        (flow): Desired => ({
          providerConfigKey: flow.providerConfigKey,
          type: flow.type,
          name: flow.syncName,
          event: null,
          js: flow.fileBody.js,
          ts: flow.fileBody.ts ?? null,
          version: flow.version ? flow.version : undefined,
          config: configOfFlow(flow, body.sdkVersion),
          models: flow.models,
        }),
      ),
      ...(mode === 'single' ? [] : (body.onEventScriptsByProvider ?? [])).flatMap((group) =>
        group.scripts.map(
          (script): Desired => ({
            providerConfigKey: group.providerConfigKey,
            type: 'on-event',
            name: script.name,
            event: script.event,
            js: script.fileBody.js,
            ts: script.fileBody.ts ?? null,
            version: undefined,
            config: configOfOnEvent(body.sdkVersion),
            models: [],
          }),
        ),
      ),
    ];
    await this.validate(caller, body, desired);

    const environmentId = caller.environmentId;
    // Inside the deploy's transaction when applying, so the plan and the writes see the same state.
    const reader = (tx ?? this.db) as Pick<Prisma.TransactionClient, 'deployedFunction'>;
    const read = (where: Prisma.DeployedFunctionWhereInput) =>
      reader.deployedFunction.findMany({
        where: { environmentId, ...where },
        include: { currentVersion: { select: { ...VERSION_WITHOUT_CODE, codeTs: true } } },
      });
    const wanted = new Set(desired.map(keyOf));
    let existing: ExistingFunction[];
    if (mode === 'all') existing = await read({});
    else {
      const keys = new Set(desired.map((d) => d.providerConfigKey));
      for (const group of body.onEventScriptsByProvider ?? []) keys.add(group.providerConfigKey);
      existing = await read({ providerConfigKey: { in: [...keys] } });
    }
    const toDelete = mode === 'single' ? [] : existing.filter((f) => !wanted.has(keyOf(f)));
    if (mode === 'single') existing = existing.filter((f) => wanted.has(keyOf(f)));
    return { mode, desired, existing, toDelete };
  }

  /** Everything that would make the deploy fail, said before anything is stored. */
  private async validate(caller: Caller, body: DeployBody, desired: Desired[]): Promise<void> {
    const errors: FieldError[] = [];
    const seen = new Set<string>();
    desired.forEach((d) => {
      const key = keyOf(d);
      if (seen.has(key)) {
        errors.push({
          code: 'duplicate',
          message: `${d.type} "${d.name}" of integration "${d.providerConfigKey}" is in the deploy twice`,
          path: ['flowConfigs'],
        });
      }
      seen.add(key);
    });
    desired.forEach((d, index) => {
      if (d.type !== 'sync') return;
      const interval = parseSyncInterval(d.config.runs ?? '');
      if (interval === 'too_short') {
        errors.push({
          code: 'sync_interval_too_short',
          message: `sync "${d.name}" runs "${d.config.runs}": the shortest sync interval is 30 seconds`,
          path: ['flowConfigs', index, 'runs'],
        });
      } else if (interval === 'invalid') {
        errors.push({
          code: 'invalid_frequency',
          message: `sync "${d.name}" runs "${d.config.runs ?? ''}", which is not a frequency ("every 2 hours", "every 30 minutes", ...)`,
          path: ['flowConfigs', index, 'runs'],
        });
      }
    });
    // A module the runtime cannot give the script fails the deploy, not the function's first run.
    const provided = new Set<string>(FUNCTION_MODULES);
    desired.forEach((d) => {
      for (const name of requiredModules(d.js)) {
        if (provided.has(name)) continue;
        const why = Object.hasOwn(UNSUPPORTED_FUNCTION_MODULES, name)
          ? UNSUPPORTED_FUNCTION_MODULES[name]
          : `functions may require only ${FUNCTION_MODULES.filter((m) => !m.startsWith('node:')).join(', ')}`;
        errors.push({
          code: 'unsupported_module',
          message: `${d.type} "${d.name}" of integration "${d.providerConfigKey}" requires module "${name}": ${why}`,
          path: ['flowConfigs'],
        });
      }
    });
    if (errors.some((e) => e.code === 'sync_interval_too_short')) {
      throw new SwitchboardError('sync_interval_too_short', errors.map((e) => e.message).join('; '), errors);
    }
    if (errors.length > 0) {
      const modules = errors.filter((e) => e.code === 'unsupported_module');
      throw new SwitchboardError(
        'invalid_body',
        modules.length > 0 ? modules.map((e) => e.message).join('; ') : 'Invalid deploy',
        errors,
      );
    }

    const keys = new Set(desired.map((d) => d.providerConfigKey));
    for (const group of body.onEventScriptsByProvider ?? []) keys.add(group.providerConfigKey);
    const missing: string[] = [];
    for (const key of keys) {
      if (!(await this.integrations.providerOf(caller, key))) missing.push(key);
    }
    if (missing.length > 0) {
      throw new SwitchboardError(
        'unknown_provider_config',
        `Integration${missing.length > 1 ? 's' : ''} ${missing.map((k) => `"${k}"`).join(', ')} ${missing.length > 1 ? 'do' : 'does'} not exist in environment "${caller.environmentName}"; create ${missing.length > 1 ? 'them' : 'it'} first`,
        missing.map((k) => ({
          code: 'unknown_provider_config',
          message: `Integration "${k}" does not exist`,
          path: ['providerConfigKey'],
        })),
      );
    }
  }
}
