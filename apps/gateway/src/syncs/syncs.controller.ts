import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query, UseFilters } from '@nestjs/common';
import {
  SwitchboardError,
  syncFrequencyBodySchema,
  syncIdentifierSchema,
  syncPauseStartBodySchema,
  syncStatusQuerySchema,
  syncTriggerBodySchema,
  syncTriggerHeadersSchema,
  syncVariantBodySchema,
  syncVariantParamsSchema,
  syncModeFlags,
  toSyncIdentifier,
  type Caller as CallerType,
  type SyncStatusResponse,
  type SyncVariantResponse,
  SYNC_REQUESTS,
} from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import { Caller } from '../access/caller.decorator';
import { RequireScope } from '../access/route-access';
import { CodeStatusFilter } from '../http/code-status.filter';
import { createZodDto } from 'nestjs-zod';
import { NoQuery, RequestHeaders } from '../http/validation';

class SyncTriggerBodyDto extends createZodDto(syncTriggerBodySchema) {}
class SyncTriggerHeadersDto extends createZodDto(syncTriggerHeadersSchema) {}
class SyncPauseStartBodyDto extends createZodDto(syncPauseStartBodySchema) {}
class SyncStatusQueryDto extends createZodDto(syncStatusQuerySchema) {}
class SyncFrequencyBodyDto extends createZodDto(syncFrequencyBodySchema) {}
class SyncVariantParamsDto extends createZodDto(syncVariantParamsSchema) {}
class SyncVariantBodyDto extends createZodDto(syncVariantBodySchema) {}

/**
 * Nango answers an unknown connection with 400 on the frequency and variant routes; trigger, pause and
 * start go through its error table (404), as everywhere else.
 */
const UNKNOWN_CONNECTION_400 = new CodeStatusFilter({ unknown_connection: 400 });

/** Nango's sync control routes; sync-orchestrator owns the syncs and their Temporal schedules. */
@Controller('sync')
export class SyncsController {
  constructor(private readonly nats: NatsRequester) {}

  /** `triggerSync`: run now (a full resync with `opts.reset` / `sync_mode`, records cleared with `emptyCache`). */
  @Post('trigger')
  @HttpCode(200)
  @RequireScope('environment:syncs:update')
  async trigger(
    @Caller() caller: CallerType,
    @RequestHeaders() parsedHeaders: SyncTriggerHeadersDto,
    @Body() parsed: SyncTriggerBodyDto,
    @Query() _query: NoQuery,
  ): Promise<{ success: true }> {
    const providerConfigKey = parsed.provider_config_key || parsedHeaders['provider-config-key'];
    if (!providerConfigKey) {
      throw new SwitchboardError(
        'missing_provider_config_key',
        'Missing provider_config_key. Provide it in the body or headers.',
      );
    }
    const connectionId = parsed.connection_id || parsedHeaders['connection-id'];
    const { reset, emptyCache } = parsed.opts
      ? { reset: parsed.opts.reset === true, emptyCache: parsed.opts.emptyCache === true }
      : syncModeFlags(parsed.sync_mode ?? parsed.full_resync);
    return this.nats.call(SYNC_REQUESTS.trigger, {
      caller,
      providerConfigKey,
      ...(connectionId ? { connectionId } : {}),
      syncs: parsed.syncs.map(toSyncIdentifier),
      reset,
      emptyCache,
    });
  }

  /** `pauseSync`: the schedules stop firing (a running run finishes). */
  @Post('pause')
  @HttpCode(200)
  @RequireScope('environment:syncs:update')
  pause(@Caller() caller: CallerType, @Body() body: SyncPauseStartBodyDto, @Query() _query: NoQuery) {
    return this.command(SYNC_REQUESTS.pause, caller, body);
  }

  /** `startSync`: a paused schedule resumes and runs now; a started one is left alone. */
  @Post('start')
  @HttpCode(200)
  @RequireScope('environment:syncs:update')
  start(@Caller() caller: CallerType, @Body() body: SyncPauseStartBodyDto, @Query() _query: NoQuery) {
    return this.command(SYNC_REQUESTS.start, caller, body);
  }

  /** `syncStatus`: `syncs=*` or a comma list (`name` or `name::variant`). */
  @Get('status')
  @RequireScope('environment:syncs:read')
  status(@Caller() caller: CallerType, @Query() query: SyncStatusQueryDto): Promise<SyncStatusResponse> {
    const all = query.syncs === '*';
    const names = all ? [] : query.syncs.split(',').map((s) => s.trim());
    const invalid = names.filter((n) => !syncIdentifierSchema.safeParse(n).success || n.length === 0);
    if (invalid.length > 0) throw new SwitchboardError('invalid_body', 'syncs parameter is invalid');
    return this.nats.call(SYNC_REQUESTS.status, {
      caller,
      providerConfigKey: query.provider_config_key,
      ...(query.connection_id ? { connectionId: query.connection_id } : {}),
      syncs: names.map(toSyncIdentifier),
      all,
    });
  }

  /** `updateSyncConnectionFrequency`: the normalised interval back; `null` reverts to the script's `runs`. */
  @Put('update-connection-frequency')
  @UseFilters(UNKNOWN_CONNECTION_400)
  @RequireScope('environment:syncs:update')
  frequency(
    @Caller() caller: CallerType,
    @Body() parsed: SyncFrequencyBodyDto,
    @Query() _query: NoQuery,
  ): Promise<{ frequency: string }> {
    return this.nats.call(SYNC_REQUESTS.frequency, {
      caller,
      providerConfigKey: parsed.provider_config_key,
      connectionId: parsed.connection_id,
      name: parsed.sync_name,
      variant: parsed.sync_variant || 'base',
      frequency: parsed.frequency,
    });
  }

  /** `createSyncVariant`: another run of the sync on the connection, scheduled at once. */
  @Post(':name/variant/:variant')
  @UseFilters(UNKNOWN_CONNECTION_400)
  @HttpCode(200)
  @RequireScope('environment:syncs:update')
  createVariant(
    @Caller() caller: CallerType,
    @Body() body: SyncVariantBodyDto,
    @Query() _query: NoQuery,
    @Param() params: SyncVariantParamsDto,
  ): Promise<SyncVariantResponse> {
    return this.nats.call(SYNC_REQUESTS.variantCreate, variantRequest(caller, params, body));
  }

  /** `deleteSyncVariant` (the client sends a JSON body on DELETE). */
  @Delete(':name/variant/:variant')
  @UseFilters(UNKNOWN_CONNECTION_400)
  @RequireScope('environment:syncs:update')
  deleteVariant(
    @Caller() caller: CallerType,
    @Body() body: SyncVariantBodyDto,
    @Query() _query: NoQuery,
    @Param() params: SyncVariantParamsDto,
  ): Promise<{ success: true }> {
    return this.nats.call(SYNC_REQUESTS.variantDelete, variantRequest(caller, params, body));
  }

  private command(
    def: typeof SYNC_REQUESTS.pause | typeof SYNC_REQUESTS.start,
    caller: CallerType,
    parsed: SyncPauseStartBodyDto,
  ) {
    return this.nats.call(def, {
      caller,
      providerConfigKey: parsed.provider_config_key,
      ...(parsed.connection_id ? { connectionId: parsed.connection_id } : {}),
      syncs: parsed.syncs.map(toSyncIdentifier),
    });
  }
}

function variantRequest(
  caller: CallerType,
  { name, variant }: SyncVariantParamsDto,
  { provider_config_key, connection_id }: SyncVariantBodyDto,
) {
  return { caller, providerConfigKey: provider_config_key, connectionId: connection_id, name, variant };
}
