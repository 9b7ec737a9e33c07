import { Body, Controller, Headers, HttpCode, Inject, Post, Query, UseGuards } from '@nestjs/common';
import {
  DEPLOY_PAYLOAD_BUCKET,
  DEPLOY_REQUESTS,
  deployBodySchema,
  type Caller as CallerType,
  type DeployBody,
  type ScriptDifferences,
  type SyncDeploymentResult,
  deployRequestSchema,
  type NatsRequestDef,
} from '@switchboard/contracts';
import { NATS_CONNECTION, NatsRequester, PayloadStore } from '@switchboard/messaging';
import type { NatsConnection } from 'nats';
import type { z } from 'zod';
import { Caller } from '../access/caller.decorator';
import { RequireScope } from '../access/route-access';
import { createZodDto } from 'nestjs-zod';
import { NoQuery } from '../http/validation';
import { GATEWAY_ENV, type GatewayEnv } from '../config/env';
import { SupportedCliGuard } from './cli-version';

class DeployBodyDto extends createZodDto(deployBodySchema) {}

/** Bodies above this go through the object store: a NATS message holds 1 MiB by default, envelope included. */
const INLINE_LIMIT_BYTES = 512 * 1024;

const encoder = new TextEncoder();

/**
 * The deploy body as JSON in pieces (each function on its own), for the object store: the same text
 * `JSON.stringify(body)` gives, without one string of the whole body beside the parsed one.
 */
export function* deployBodyChunks(body: DeployBody): Generator<Uint8Array> {
  const { flowConfigs, onEventScriptsByProvider, ...rest } = body;
  yield encoder.encode('{"flowConfigs":[');
  for (const [i, flow] of flowConfigs.entries()) {
    yield encoder.encode(`${i > 0 ? ',' : ''}${JSON.stringify(flow)}`);
  }
  yield encoder.encode(']');
  if (onEventScriptsByProvider) {
    yield encoder.encode(',"onEventScriptsByProvider":[');
    for (const [i, group] of onEventScriptsByProvider.entries()) {
      yield encoder.encode(`${i > 0 ? ',' : ''}${JSON.stringify(group)}`);
    }
    yield encoder.encode(']');
  }
  for (const [key, value] of Object.entries(rest)) {
    if (value !== undefined) yield encoder.encode(`,${JSON.stringify(key)}:${JSON.stringify(value)}`);
  }
  yield encoder.encode('}');
}

/** The two requests `nango deploy` makes (the CLI reads only the JSON, never the status). */
@Controller('sync/deploy')
@UseGuards(SupportedCliGuard)
export class DeployController {
  constructor(
    private readonly nats: NatsRequester,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(GATEWAY_ENV) private readonly env: GatewayEnv,
  ) {}

  @Post('confirmation')
  @HttpCode(200)
  @RequireScope('environment:functions:write')
  async confirmation(
    @Caller() caller: CallerType,
    @Headers('content-length') contentLength: string | undefined,
    @Body() body: DeployBodyDto,
    @Query() _query: NoQuery,
  ): Promise<ScriptDifferences> {
    return this.send(DEPLOY_REQUESTS.confirm, caller, body, contentLength);
  }

  @Post()
  @HttpCode(200)
  @RequireScope('environment:functions:write')
  async deploy(
    @Caller() caller: CallerType,
    @Headers('content-length') contentLength: string | undefined,
    @Body() body: DeployBodyDto,
    @Query() _query: NoQuery,
  ): Promise<SyncDeploymentResult[]> {
    return this.send(DEPLOY_REQUESTS.apply, caller, body, contentLength);
  }

  private async send<R extends z.ZodType>(
    def: NatsRequestDef<typeof deployRequestSchema, R>,
    caller: CallerType,
    body: DeployBody,
    contentLength: string | undefined,
  ): Promise<z.output<R>> {
    // Storing many functions can take a while; the CLI waits as long as we let it.
    const timeoutMs = this.env.SWITCHBOARD_DEPLOY_TIMEOUT_MS;
    // The request's own size says whether it fits a message, without serialising a large body whole.
    const received = Number(contentLength);
    if (Number.isSafeInteger(received) && received > 0 && received <= INLINE_LIMIT_BYTES) {
      return this.nats.call(def, { caller, body }, { timeoutMs });
    }
    // A backstop TTL: the body is deleted below once the orchestrator answered.
    const store = new PayloadStore(this.nc, DEPLOY_PAYLOAD_BUCKET, { storage: 'file', ttlMs: 15 * 60_000 });
    // Serialised function by function: a large project (tens of MB of bundles) is never one more string
    // beside the parsed body. The client publishes every chunk before it waits for their acks: tens of MB need more than its
    // default 5 s per ack on a busy server.
    const { name: bodyRef } = await store.put(ReadableStream.from(deployBodyChunks(body)), {
      timeoutMs,
    });
    try {
      return await this.nats.call(def, { caller, bodyRef }, { timeoutMs });
    } finally {
      await store.delete(bodyRef);
    }
  }
}
