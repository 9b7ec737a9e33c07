import { randomUUID } from 'node:crypto';
import { Body, Controller, Headers, HttpCode, Inject, Post, Query } from '@nestjs/common';
import {
  DEPLOY_PAYLOAD_BUCKET,
  DEPLOY_SUBJECTS,
  deployBodySchema,
  type Caller as CallerType,
  type DeployBody,
  type ScriptDifferences,
  type SyncDeploymentResult,
} from '@switchboard/contracts';
import { NATS_CONNECTION, NatsRequester } from '@switchboard/messaging';
import { nanos, StorageType, type NatsConnection } from 'nats';
import { z } from 'zod';
import { Caller } from '../access/caller.decorator';
import { RequireScope } from '../access/route-access';
import { parseBody, parseQuery } from '../http/validation';
import { assertCliVersion } from './cli-version';

const noQuery = z.object({}).strict();
/** Bodies above this go through the object store: a NATS message holds 1 MiB by default, envelope included. */
const INLINE_LIMIT_BYTES = 512 * 1024;
/** Storing many functions can take a while; the CLI waits as long as we need. */
const DEPLOY_TIMEOUT_MS = 60_000;

/** The two requests `nango deploy` makes (the CLI reads only the JSON, never the status). */
@Controller('sync/deploy')
export class DeployController {
  constructor(
    private readonly nats: NatsRequester,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
  ) {}

  @Post('confirmation')
  @HttpCode(200)
  @RequireScope('environment:functions:write')
  async confirmation(
    @Caller() caller: CallerType,
    @Headers('user-agent') userAgent: string | undefined,
    @Query() query: unknown,
    @Body() body: unknown,
  ): Promise<ScriptDifferences> {
    assertCliVersion(userAgent);
    parseQuery(noQuery, query);
    return this.send<ScriptDifferences>(DEPLOY_SUBJECTS.confirm, caller, parseBody(deployBodySchema, body));
  }

  @Post()
  @HttpCode(200)
  @RequireScope('environment:functions:write')
  async deploy(
    @Caller() caller: CallerType,
    @Headers('user-agent') userAgent: string | undefined,
    @Query() query: unknown,
    @Body() body: unknown,
  ): Promise<SyncDeploymentResult[]> {
    assertCliVersion(userAgent);
    parseQuery(noQuery, query);
    return this.send<SyncDeploymentResult[]>(
      DEPLOY_SUBJECTS.apply,
      caller,
      parseBody(deployBodySchema, body),
    );
  }

  private async send<T>(subject: string, caller: CallerType, body: DeployBody): Promise<T> {
    const serialized = JSON.stringify(body);
    if (Buffer.byteLength(serialized) <= INLINE_LIMIT_BYTES) {
      return this.nats.request<T>(subject, { caller, body }, { timeoutMs: DEPLOY_TIMEOUT_MS });
    }
    const store = await this.nc.jetstream().views.os(DEPLOY_PAYLOAD_BUCKET, {
      storage: StorageType.File,
      // A backstop: the body is deleted below once the orchestrator answered.
      ttl: nanos(15 * 60_000),
    });
    const bodyRef = randomUUID();
    await store.putBlob({ name: bodyRef }, Buffer.from(serialized));
    try {
      return await this.nats.request<T>(subject, { caller, bodyRef }, { timeoutMs: DEPLOY_TIMEOUT_MS });
    } finally {
      await store.delete(bodyRef).catch(() => undefined);
    }
  }
}
