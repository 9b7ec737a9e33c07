import { Controller, Inject } from '@nestjs/common';
import {
  DEPLOY_PAYLOAD_BUCKET,
  deployBodySchema,
  fieldErrorsFromZod,
  listFunctionsRequestSchema,
  scriptsConfigRequestSchema,
  SwitchboardError,
  type DeployBody,
  type DeployedFunction,
  type DeployRequest,
  type FunctionBundleReply,
  type FunctionBundleRequest,
  type FunctionCode,
  type FunctionRequest,
  type ListFunctionsResponse,
  type OpenAiFunction,
  type ScriptDifferences,
  type StandardNangoConfig,
  type SyncDeploymentResult,
  DEPLOY_REQUESTS,
  FUNCTIONS_API_REQUESTS,
  FUNCTION_BUNDLE_REQUESTS,
} from '@switchboard/contracts';
import { NATS_CONNECTION, NatsHandler, parseStoredJson, PayloadStore } from '@switchboard/messaging';
import type { NatsConnection } from 'nats';
import type { z } from 'zod';
import { DeployedFunctionsCache } from './deployed-functions-cache';
import { DeployService } from './deploy.service';
import { SyncsService } from '../syncs/syncs.service';
import {
  storedConfig,
  toDeployedFunction,
  toNangoSyncConfig,
  toOpenAiFunction,
  type FunctionWithVersion,
} from './function-config';
import { FunctionsRepository } from './functions.repository';
import { IntegrationDirectory } from './integration-directory';

@Controller()
export class FunctionsHandlers {
  constructor(
    private readonly deploys: DeployService,
    private readonly functions: FunctionsRepository,
    private readonly integrations: IntegrationDirectory,
    private readonly syncs: SyncsService,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    private readonly lookups: DeployedFunctionsCache,
  ) {}

  @NatsHandler(DEPLOY_REQUESTS.confirm)
  async confirm(request: DeployRequest): Promise<ScriptDifferences> {
    return this.deploys.confirm(request.caller, await this.bodyOf(request));
  }

  @NatsHandler(DEPLOY_REQUESTS.apply)
  async apply(request: DeployRequest): Promise<SyncDeploymentResult[]> {
    return this.deploys.apply(request.caller, await this.bodyOf(request));
  }

  @NatsHandler(FUNCTIONS_API_REQUESTS.list)
  async list(request: z.infer<typeof listFunctionsRequestSchema>): Promise<ListFunctionsResponse> {
    await this.integrations.require(request.caller, request.uniqueKey);
    const { page, limit, type, search } = request.query;
    const { rows, total } = await this.functions.page(
      request.caller.environmentId,
      { providerConfigKey: request.uniqueKey, ...(type ? { type } : {}), ...(search ? { search } : {}) },
      page,
      limit,
    );
    return { data: rows.map(toDeployedFunction), pagination: { total, page, limit } };
  }

  @NatsHandler(FUNCTIONS_API_REQUESTS.get)
  async get(request: FunctionRequest): Promise<DeployedFunction> {
    return toDeployedFunction(await this.one(request));
  }

  @NatsHandler(FUNCTIONS_API_REQUESTS.code)
  async code(request: FunctionRequest): Promise<FunctionCode> {
    const fn = await this.one(request);
    const code = fn.currentVersion ? await this.functions.code(fn.currentVersion.id) : '';
    return { type: fn.type as FunctionCode['type'], code };
  }

  /** A bundle by its hash, for functions-runtime: run requests carry the hash, not the bundle. */
  @NatsHandler(FUNCTION_BUNDLE_REQUESTS.get)
  async bundle(request: FunctionBundleRequest): Promise<FunctionBundleReply> {
    const code = await this.functions.bundle(
      request.caller.environmentId,
      Number(request.functionId),
      request.codeSha256,
    );
    if (code === undefined) {
      throw new SwitchboardError('not_found', 'No such bundle for this function in this environment');
    }
    return { code };
  }

  @NatsHandler(FUNCTIONS_API_REQUESTS.delete)
  async delete(request: FunctionRequest): Promise<{ success: true }> {
    await this.integrations.require(request.caller, request.uniqueKey);
    if (!request.type) throw new SwitchboardError('invalid_query_params', 'type is required');
    const [fn] =
      request.type === 'sync'
        ? await this.functions.find(request.caller.environmentId, {
            providerConfigKey: request.uniqueKey,
            name: request.name,
            type: 'sync',
          })
        : [];
    const deleted = await this.functions.delete(
      request.caller.environmentId,
      request.uniqueKey,
      request.type,
      request.name,
    );
    if (!deleted) throw new SwitchboardError('not_found', `Function "${request.name}" not found`);
    if (fn) {
      // The sync stops on every connection: schedules, checkpoints and records go with it.
      await this.syncs.reconcile(
        request.caller.environmentId,
        [],
        [{ providerConfigKey: fn.providerConfigKey, name: fn.name, models: storedConfig(fn).returns }],
      );
    }
    this.lookups.functionsChanged(request.caller.environmentId);
    return { success: true };
  }

  @NatsHandler(FUNCTIONS_API_REQUESTS.scriptsConfig)
  async scriptsConfig(
    request: z.infer<typeof scriptsConfigRequestSchema>,
  ): Promise<StandardNangoConfig[] | { data: OpenAiFunction[] }> {
    const all = await this.functions.find(request.caller.environmentId, {});
    if (request.format === 'openai') {
      return { data: all.filter((f) => f.type === 'action' && f.enabled).map(toOpenAiFunction) };
    }
    if (all.length === 0) return [];
    const providers = new Map(
      (await this.integrations.list(request.caller)).map((i) => [i.unique_key, i.provider]),
    );
    const byIntegration = new Map<string, FunctionWithVersion[]>();
    for (const fn of all) {
      const list = byIntegration.get(fn.providerConfigKey) ?? [];
      list.push(fn);
      byIntegration.set(fn.providerConfigKey, list);
    }
    return [...byIntegration].map(([providerConfigKey, fns]) => {
      const provider = providers.get(providerConfigKey);
      return {
        providerConfigKey,
        ...(provider ? { provider } : {}),
        syncs: fns.filter((f) => f.type === 'sync').map(toNangoSyncConfig),
        actions: fns.filter((f) => f.type === 'action').map(toNangoSyncConfig),
        'on-events': fns.filter((f) => f.type === 'on-event').map(toNangoSyncConfig),
      };
    });
  }

  /** The one function a name (and maybe a type) designates; several types under one name need a `type`. */
  private async one(request: FunctionRequest): Promise<FunctionWithVersion> {
    await this.integrations.require(request.caller, request.uniqueKey);
    const found = await this.functions.find(request.caller.environmentId, {
      providerConfigKey: request.uniqueKey,
      name: request.name,
      ...(request.type ? { type: request.type } : {}),
    });
    const [first] = found;
    if (!first) throw new SwitchboardError('not_found', `Function "${request.name}" not found`);
    if (found.length > 1) {
      throw new SwitchboardError(
        'ambiguous_function',
        `Several functions are named "${request.name}"; pass type to choose one`,
        undefined,
        { matches: found.map((f) => ({ type: f.type, name: f.name })) },
      );
    }
    return first;
  }

  /** The deploy body, inline or from the object store where the gateway put a large one. */
  private async bodyOf(request: DeployRequest): Promise<DeployBody> {
    if (request.body) return request.body;
    if (!request.bodyRef) throw new SwitchboardError('invalid_body', 'The deploy body is missing');
    const blob = await new PayloadStore(this.nc, DEPLOY_PAYLOAD_BUCKET).get(request.bodyRef);
    if (!blob) throw new SwitchboardError('invalid_body', 'The deploy body has expired; deploy again');
    let parsed: unknown;
    try {
      // A view of the blob, not a copy of it: a large project's body is tens of MB.
      parsed = parseStoredJson(blob);
    } catch {
      throw new SwitchboardError('invalid_body', 'The stored deploy body is not JSON');
    }
    const result = deployBodySchema.safeParse(parsed);
    if (!result.success) {
      throw new SwitchboardError('invalid_body', 'Invalid deploy', fieldErrorsFromZod(result.error));
    }
    return result.data;
  }
}
