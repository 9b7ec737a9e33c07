import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import {
  type Caller,
  type DeployBody,
  type OnEventType,
  type ScriptDifferences,
  type SyncDeploymentResult,
  CONNECTION_REQUESTS,
} from '@switchboard/contracts';
import type { OrchestratorDb, Prisma } from '@switchboard/db';
import { NatsRequester } from '@switchboard/messaging';
import { DeployedFunctionsCache } from './deployed-functions-cache';
import { ORCHESTRATOR_DB } from '../database/database.module';
import { SyncsService, type RemovedSync } from '../syncs/syncs.service';
import { DeployPlanner, keyOf, sha256, type Desired, type Plan } from './deploy-plan';
import { storedConfig } from './function-config';

/** A desired function's version: `versionId` set when a new version is written. */
interface Outcome {
  d: Desired;
  version: string;
  id?: number;
  versionId?: string;
  sha: string;
}

/** Functions written per statement when a deploy stores them. */
const WRITE_BATCH = 200;

function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Nango's default when a script sets no version, and the first step of bumping one. */
const FIRST_VERSION = '0.0.1';

/** `1.2.3` → `1.2.4`; anything else gets a fresh `0.0.1`. */
export function nextVersion(previous: string | undefined): string {
  const match = previous ? /^(\d+)\.(\d+)\.(\d+)$/.exec(previous) : null;
  if (!match) return FIRST_VERSION;
  return `${match[1]}.${match[2]}.${Number(match[3]) + 1}`;
}

/**
 * `nango deploy`: works out what a deploy changes (the CLI prints it, and asks before destroying), then
 * stores it. A redeploy of a function adds a version and swaps the function's current version in the same
 * transaction as everything else of the deploy; invocations already running keep the version they pinned.
 */
@Injectable()
export class DeployService {
  constructor(
    @Inject(ORCHESTRATOR_DB) private readonly db: OrchestratorDb,
    private readonly planner: DeployPlanner,
    private readonly nats: NatsRequester,
    private readonly syncs: SyncsService,
    private readonly lookups: DeployedFunctionsCache,
  ) {}

  async confirm(caller: Caller, body: DeployBody): Promise<ScriptDifferences> {
    const plan = await this.planner.plan(caller, body);
    const existing = new Map(plan.existing.map((f) => [keyOf(f), f]));
    const diff: ScriptDifferences = {
      newSyncs: [],
      updatedSyncs: [],
      deletedSyncs: [],
      newActions: [],
      updatedActions: [],
      deletedActions: [],
      newOnEventScripts: [],
      updatedOnEventScripts: [],
      deletedOnEventScripts: [],
      deletedModels: [],
    };
    for (const d of plan.desired) {
      const found = existing.get(keyOf(d));
      if (d.type === 'sync') {
        const slim = {
          name: d.name,
          providerConfigKey: d.providerConfigKey,
          auto_start: d.config.auto_start,
          connections: 0,
        };
        if (found) diff.updatedSyncs.push({ ...slim, id: found.id });
        else diff.newSyncs.push(slim);
      } else if (d.type === 'action') {
        const slim = { name: d.name, providerConfigKey: d.providerConfigKey };
        if (found) diff.updatedActions.push({ ...slim, id: found.id });
        else diff.newActions.push(slim);
      } else {
        const slim = { name: d.name, providerConfigKey: d.providerConfigKey, event: d.event! };
        (found ? diff.updatedOnEventScripts : diff.newOnEventScripts).push(slim);
      }
    }
    const connections = new Map<string, number>();
    for (const f of plan.toDelete) {
      if (f.type === 'sync') {
        // A sync runs for every connection of its integration: deleting it stops all of them.
        let count = connections.get(f.providerConfigKey);
        if (count === undefined) {
          count = await this.nats.call(CONNECTION_REQUESTS.countForIntegration, {
            environmentId: caller.environmentId,
            providerConfigKey: f.providerConfigKey,
          });
          connections.set(f.providerConfigKey, count);
        }
        diff.deletedSyncs.push({
          name: f.name,
          providerConfigKey: f.providerConfigKey,
          auto_start: storedConfig(f).auto_start,
          connections: count,
          id: f.id,
        });
      } else if (f.type === 'action') {
        diff.deletedActions.push({ name: f.name, providerConfigKey: f.providerConfigKey, id: f.id });
      } else {
        diff.deletedOnEventScripts.push({
          name: f.name,
          providerConfigKey: f.providerConfigKey,
          event: f.event as OnEventType,
        });
      }
    }
    // Models that only deleted syncs produced: their records would no longer be written by anything.
    const kept = new Set(plan.desired.filter((d) => d.type === 'sync').flatMap((d) => d.models));
    const survivors = plan.existing.filter(
      (f) =>
        f.type === 'sync' && !plan.toDelete.includes(f) && !plan.desired.some((d) => keyOf(d) === keyOf(f)),
    );
    for (const f of survivors) for (const m of storedConfig(f).returns) kept.add(m);
    const deletedModels = new Set<string>();
    for (const f of plan.toDelete) {
      if (f.type !== 'sync') continue;
      for (const m of storedConfig(f).returns) if (!kept.has(m)) deletedModels.add(m);
    }
    diff.deletedModels = [...deletedModels].sort();
    return diff;
  }

  async apply(caller: Caller, body: DeployBody): Promise<SyncDeploymentResult[]> {
    const source = body.source ?? 'repo';
    const results: SyncDeploymentResult[] = [];
    const touched = new Set<string>();
    const removed: RemovedSync[] = [];
    await this.db.$transaction(
      async (tx) => {
        // One deploy of an environment at a time: two overlapping ones would each reconcile away the other's.
        await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('orchestrator.deploy'), ${caller.environmentId}::int)`;
        const plan = await this.planner.plan(caller, body, tx);
        for (const d of plan.desired) if (d.type === 'sync') touched.add(d.providerConfigKey);
        results.push(...(await this.store(tx, caller, plan, source)));
        if (body.reconcile && plan.toDelete.length > 0) {
          await tx.deployedFunction.deleteMany({ where: { id: { in: plan.toDelete.map((f) => f.id) } } });
          for (const f of plan.toDelete) {
            if (f.type !== 'sync') continue;
            removed.push({
              providerConfigKey: f.providerConfigKey,
              name: f.name,
              models: storedConfig(f).returns,
            });
          }
        }
      },
      { timeout: 30_000, maxWait: 30_000 },
    );
    // Schedules follow what was stored: every connection of a deployed sync's integration gets one.
    await this.syncs.reconcile(caller.environmentId, [...touched], removed);
    // Before the deploy is answered: the next trigger on this replica already runs the new versions.
    this.lookups.functionsChanged(caller.environmentId);
    return results;
  }

  /**
   * Stores the plan's functions: a new version for each one that changed, the function pointed at it.
   * Answers every deployed function as Nango lists them.
   */
  private async store(
    tx: Prisma.TransactionClient,
    caller: Caller,
    plan: Plan,
    source: string,
  ): Promise<SyncDeploymentResult[]> {
    const results: SyncDeploymentResult[] = [];
    const now = new Date();
    // A project may hold thousands of functions: the writes are a few statements for all of them,
    // not a few per function (one round trip each made a ~1,700-function deploy outlive its transaction).
    const { outcomes, unchangedIds } = versionsOf(plan);
    if (unchangedIds.length > 0) {
      await tx.deployedFunction.updateMany({
        where: { id: { in: unchangedIds } },
        data: { lastDeployedAt: now, source, enabled: true },
      });
    }
    const fresh = outcomes.filter((o) => o.id === undefined);
    for (const batch of chunks(fresh, WRITE_BATCH)) {
      const created = await tx.deployedFunction.createManyAndReturn({
        data: batch.map(({ d }) => ({
          environmentId: caller.environmentId,
          providerConfigKey: d.providerConfigKey,
          name: d.name,
          type: d.type,
          event: d.event,
          source,
          lastDeployedAt: now,
        })),
        select: { id: true, providerConfigKey: true, type: true, name: true },
      });
      const ids = new Map(created.map((f) => [keyOf(f), f.id]));
      for (const o of batch) o.id = ids.get(keyOf(o.d));
    }
    const changed = outcomes.filter((o) => o.versionId !== undefined);
    for (const batch of chunks(changed, WRITE_BATCH)) {
      await tx.functionVersion.createMany({
        data: batch.map((o) => ({
          id: o.versionId!,
          functionId: o.id!,
          version: o.version,
          codeJs: o.d.js,
          codeTs: o.d.ts,
          sha256: o.sha,
          config: o.d.config as unknown as Prisma.InputJsonValue,
        })),
      });
      // Raw SQL: one UPDATE pointing each function at its own new version (updateMany sets one value).
      await tx.$executeRaw`
        UPDATE orchestrator.functions AS f
        SET current_version_id = v.version_id::uuid, event = v.event, last_deployed_at = ${now},
            source = ${source}, enabled = true, updated_at = now()
        FROM unnest(${batch.map((o) => o.id!)}::int[], ${batch.map((o) => o.versionId!)}::text[],
                    ${batch.map((o) => o.d.event)}::text[]) AS v(id, version_id, event)
        WHERE f.id = v.id`;
    }
    for (const { d, version, id } of outcomes) {
      // Every deployed function, on-event scripts included, as Nango lists them (the CLI prints each).
      results.push({
        name: d.name,
        version,
        providerConfigKey: d.providerConfigKey,
        type: d.type,
        models: d.models,
        id: id!,
      });
    }
    return results;
  }
}

/** Each desired function's version: its current one when nothing changed, else a new version to write. */
function versionsOf(plan: Plan): { outcomes: Outcome[]; unchangedIds: number[] } {
  const existing = new Map(plan.existing.map((f) => [keyOf(f), f]));
  const outcomes: Outcome[] = [];
  const unchangedIds: number[] = [];
  for (const d of plan.desired) {
    const found = existing.get(keyOf(d));
    const current = found?.currentVersion;
    const sha = sha256(d.js);
    const unchanged =
      current &&
      current.sha256 === sha &&
      (d.version === undefined || d.version === current.version) &&
      JSON.stringify(current.config) === JSON.stringify(d.config) &&
      current.codeTs === d.ts;
    if (unchanged && found) {
      unchangedIds.push(found.id);
      outcomes.push({ d, version: current.version, id: found.id, sha });
    } else {
      const version = d.version ?? (current ? nextVersion(current.version) : FIRST_VERSION);
      outcomes.push({ d, version, ...(found ? { id: found.id } : {}), versionId: randomUUID(), sha });
    }
  }
  return { outcomes, unchangedIds };
}
