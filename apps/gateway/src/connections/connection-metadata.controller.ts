import { Body, Controller, HttpCode, Patch, Post, Query } from '@nestjs/common';
import {
  connectionMetadataBodySchema,
  type Caller as CallerType,
  CONNECTIONS_API_REQUESTS,
} from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import { Caller } from '../access/caller.decorator';
import { RequireScope } from '../access/route-access';
import { createZodDto } from 'nestjs-zod';
import { NoQuery } from '../http/validation';

class ConnectionMetadataBodyDto extends createZodDto(connectionMetadataBodySchema) {}

/**
 * Connection metadata, for one connection or many at once (all or nothing). Both answer with the
 * request body as sent (the untyped `@Body()`, not the parsed one), which is what the official client
 * hands back to its caller.
 */
@Controller('connections/metadata')
export class ConnectionMetadataController {
  constructor(private readonly nats: NatsRequester) {}

  /** Replaces the metadata. */
  @Post()
  @HttpCode(201)
  @RequireScope('environment:connections:write')
  async set(
    @Caller() caller: CallerType,
    @Body() parsed: ConnectionMetadataBodyDto,
    @Body() body: unknown,
    @Query() _query: NoQuery,
  ): Promise<unknown> {
    await this.nats.call(CONNECTIONS_API_REQUESTS.setMetadata, { caller, body: parsed });
    return body;
  }

  /** Merges the given top-level keys into the metadata. */
  @Patch()
  @HttpCode(200)
  @RequireScope('environment:connections:write')
  async update(
    @Caller() caller: CallerType,
    @Body() parsed: ConnectionMetadataBodyDto,
    @Body() body: unknown,
    @Query() _query: NoQuery,
  ): Promise<unknown> {
    await this.nats.call(CONNECTIONS_API_REQUESTS.updateMetadata, { caller, body: parsed });
    return body;
  }
}
