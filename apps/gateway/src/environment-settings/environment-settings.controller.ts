import { Body, Controller, Get, HttpCode, Patch, Post, Query } from '@nestjs/common';
import {
  patchEnvironmentBodySchema,
  type ApiEnvironment,
  type Caller as CallerType,
  type EnvironmentWebhookState,
  type RotatedSigningKey,
  WEBHOOK_REQUESTS,
} from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import { Caller } from '../access/caller.decorator';
import { RequireScope } from '../access/route-access';
import { createZodDto } from 'nestjs-zod';
import { NoQuery } from '../http/validation';

class PatchEnvironmentBodyDto extends createZodDto(patchEnvironmentBodySchema) {}

/**
 * The caller's environment: its identity (auth-connect's, already known from the key) and its webhook
 * settings and signing key (webhook-relay's).
 */
@Controller('environment')
export class EnvironmentSettingsController {
  constructor(private readonly nats: NatsRequester) {}

  @Get()
  @RequireScope('environment:settings:read')
  async get(@Caller() caller: CallerType, @Query() _query: NoQuery): Promise<{ data: ApiEnvironment }> {
    const state = await this.nats.call(WEBHOOK_REQUESTS.getSettings, {
      environmentId: caller.environmentId,
    });
    return { data: withIdentity(caller, state) };
  }

  @Patch()
  @RequireScope('environment:settings:write')
  async update(
    @Caller() caller: CallerType,
    @Body() parsed: PatchEnvironmentBodyDto,
    @Query() _query: NoQuery,
  ): Promise<{ data: ApiEnvironment }> {
    const state = await this.nats.call(WEBHOOK_REQUESTS.updateSettings, {
      environmentId: caller.environmentId,
      patch: parsed.webhook_settings,
    });
    return { data: withIdentity(caller, state) };
  }

  /** A new signing key at once; the previous one keeps signing (`webhook-signature`) for the grace period. */
  @Post('webhook-signing-key/rotate')
  @HttpCode(200)
  @RequireScope('environment:settings:write')
  async rotate(@Caller() caller: CallerType, @Query() _query: NoQuery): Promise<{ data: RotatedSigningKey }> {
    return {
      data: await this.nats.call(WEBHOOK_REQUESTS.rotateSigningKey, {
        environmentId: caller.environmentId,
      }),
    };
  }
}

function withIdentity(caller: CallerType, state: EnvironmentWebhookState): ApiEnvironment {
  return { id: caller.environmentId, uuid: caller.environmentUuid, name: caller.environmentName, ...state };
}
