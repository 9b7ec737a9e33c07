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
import { createZodDto } from 'nestjs-zod';
import { PROVIDER_TEMPLATES } from './templates';

class ListProvidersQueryDto extends createZodDto(listProvidersQuerySchema) {}
class ProviderParamsDto extends createZodDto(z.object({ provider: providerKeySchema })) {}

@Controller('providers')
export class ProvidersController {
  constructor(private readonly nats: NatsRequester) {}

  @Get()
  @RequireScopeOrSession('environment:providers:read')
  async list(@Query() { search }: ListProvidersQueryDto): Promise<{ data: ApiProvider[] }> {
    return { data: await this.nats.call(PROVIDER_REQUESTS.list, { search }) };
  }

  @Get(':provider')
  @RequireScopeOrSession('environment:providers:read')
  async get(@Param() { provider }: ProviderParamsDto): Promise<{ data: ApiProvider }> {
    return { data: await this.nats.call(PROVIDER_REQUESTS.get, { name: provider }) };
  }

  /** Pre-built function templates (a few providers have some); an unknown provider is a 404. */
  @Get(':provider/templates')
  @RequireScope('environment:providers:read')
  async templates(@Param() { provider }: ProviderParamsDto): Promise<{ data: unknown[] }> {
    // The catalog's name, so an alias finds its provider's templates.
    const found = await this.nats.call(PROVIDER_REQUESTS.get, { name: provider });
    return { data: PROVIDER_TEMPLATES[found.name] ?? PROVIDER_TEMPLATES[provider] ?? [] };
  }
}
