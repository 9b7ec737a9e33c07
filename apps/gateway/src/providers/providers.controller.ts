import { Controller, Get, Param, Query } from '@nestjs/common';
import {
  listProvidersQuerySchema,
  providerKeySchema,
  type ApiProvider,
  PROVIDER_REQUESTS,
} from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import { z } from 'zod';
import { RequireScope, RequireScopeOrSession } from '../access/route-access';
import { parseParams, parseQuery } from '../http/validation';
import { PROVIDER_TEMPLATES } from './templates';

const paramsSchema = z.object({ provider: providerKeySchema });

@Controller('providers')
export class ProvidersController {
  constructor(private readonly nats: NatsRequester) {}

  @Get()
  @RequireScopeOrSession('environment:providers:read')
  async list(@Query() query: unknown): Promise<{ data: ApiProvider[] }> {
    const { search } = parseQuery(listProvidersQuerySchema, query);
    return { data: await this.nats.call(PROVIDER_REQUESTS.list, { search }) };
  }

  @Get(':provider')
  @RequireScopeOrSession('environment:providers:read')
  async get(@Param() params: unknown): Promise<{ data: ApiProvider }> {
    const { provider } = parseParams(paramsSchema, params);
    return { data: await this.nats.call(PROVIDER_REQUESTS.get, { name: provider }) };
  }

  /** Pre-built function templates (a few providers have some); an unknown provider is a 404. */
  @Get(':provider/templates')
  @RequireScope('environment:providers:read')
  async templates(@Param() params: unknown): Promise<{ data: unknown[] }> {
    const { provider } = parseParams(paramsSchema, params);
    // The catalog's name, so an alias finds its provider's templates.
    const found = await this.nats.call(PROVIDER_REQUESTS.get, { name: provider });
    return { data: PROVIDER_TEMPLATES[found.name] ?? PROVIDER_TEMPLATES[provider] ?? [] };
  }
}
