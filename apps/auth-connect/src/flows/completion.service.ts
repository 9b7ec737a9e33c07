import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  authEventSchema,
  EVENT_SUBJECTS,
  type Credentials,
  type FlowResult,
  type ValidateConnectionRequest,
  ON_EVENT_REQUESTS,
  VAULT_REQUESTS,
} from '@switchboard/contracts';
import { Prisma, type ConnectDb } from '@switchboard/db';
import { NATS_CONNECTION, NatsRequester, publishEvent } from '@switchboard/messaging';
import { connectionConfigValueProblems } from '@switchboard/providers';
import type { NatsConnection } from 'nats';
import { AuthConnectError } from '../auth-connect.errors';
import { AUTH_CONNECT_ENV, type AuthConnectEnv } from '../config/env';
import { AUTH_DB } from '../database/database.module';
import type { FlowContext } from './flow-context.service';

/** Beyond the scripts' own budget: the runtime's abort grace, loading and answering. */
const VALIDATION_MARGIN_MS = 5_000;

/**
 * The last step of every flow: the integration's validate-connection scripts (deployed functions, run by
 * the orchestrator) accept or refuse the new credentials before anything is stored; the vault stores the
 * connection (and publishes the auth event for the webhook relay), then the end user and the fact that a session created this connection are recorded
 * here (the latter is what makes it eligible for a reconnect session), and the connect session ends.
 */
@Injectable()
export class CompletionService {
  private readonly logger = new Logger('ConnectFlows');

  constructor(
    @Inject(AUTH_DB) private readonly db: ConnectDb,
    private readonly nats: NatsRequester,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(AUTH_CONNECT_ENV) private readonly env: AuthConnectEnv,
  ) {}

  async complete(
    ctx: FlowContext,
    credentials: Credentials,
    connectionConfig: Record<string, unknown>,
  ): Promise<FlowResult> {
    const { session } = ctx;
    // The last gate before anything is stored, whoever supplied the values (the page, the session, the
    // provider's token response): a host field outside the provider's domains never reaches the vault.
    const problems = connectionConfigValueProblems(ctx.provider, connectionConfig);
    if (problems.length > 0) {
      throw new AuthConnectError(
        'invalid_connection',
        'The connection config names a host or value the provider does not allow',
        problems.map(([name, message]) => ({
          code: 'invalid_format',
          message: `${name} ${message}`,
          path: ['connection_config', name],
        })),
      );
    }
    await this.validate(ctx, credentials, connectionConfig);
    await this.nats.call(VAULT_REQUESTS.store, {
      environmentId: ctx.caller.environmentId,
      providerConfigKey: ctx.providerConfigKey,
      provider: ctx.provider.name,
      connectionId: ctx.connectionId,
      credentials,
      connectionConfig,
      tags: session.tags,
      endUser: session.endUser,
      // A new connection takes the session's override (or none); a reconnect keeps the current one unless
      // its session names another.
      ...(ctx.operation === 'creation' || session.webhookUrlOverride
        ? { webhookUrlOverride: session.webhookUrlOverride }
        : {}),
      operation: ctx.operation,
    });

    const environmentId = ctx.caller.environmentId;
    const endUser = session.endUser;
    try {
      if (endUser) {
        const fields = {
          email: endUser.email,
          displayName: endUser.display_name,
          tags: (endUser.tags as Prisma.InputJsonValue | null) ?? Prisma.DbNull,
          organizationId: endUser.organization?.id ?? null,
          organizationDisplayName: endUser.organization?.display_name ?? null,
        };
        await this.db.endUser.upsert({
          where: { environmentId_endUserId: { environmentId, endUserId: endUser.id } },
          create: { environmentId, endUserId: endUser.id, ...fields },
          update: fields,
        });
      }
      await this.db.sessionConnection.upsert({
        where: {
          environmentId_providerConfigKey_connectionId: {
            environmentId,
            providerConfigKey: ctx.providerConfigKey,
            connectionId: ctx.connectionId,
          },
        },
        create: {
          environmentId,
          providerConfigKey: ctx.providerConfigKey,
          connectionId: ctx.connectionId,
          endUserId: endUser?.id ?? null,
        },
        update: { endUserId: endUser?.id ?? null },
      });
    } catch (error) {
      // The connection exists and works; losing only the bookkeeping must not fail the end user's flow.
      this.logger.error(
        `recording the session connection ${ctx.providerConfigKey}/${ctx.connectionId} failed: ${String(error)}`,
      );
    }
    // The session did its job: its token stops working (any other flow it had open is dropped with it), so a
    // leaked connect link cannot add or replace connections afterwards.
    await this.db.connectSession.deleteMany({ where: { id: session.id } });
    return { connectionId: ctx.connectionId, providerConfigKey: ctx.providerConfigKey };
  }

  /**
   * Runs the integration's validate-connection scripts with the candidate credentials (the orchestrator
   * answers at once when there are none). A refusal ends the flow with the script's reason and nothing is
   * stored; as in Nango, a refused reconnect also sends a failed `override` auth webhook (the stored
   * connection keeps its previous credentials here, since the refused ones were never stored). Without an
   * answer the connection is refused too: a check that could not run is not a check that passed.
   */
  private async validate(
    ctx: FlowContext,
    credentials: Credentials,
    connectionConfig: Record<string, unknown>,
  ): Promise<void> {
    const request: ValidateConnectionRequest = {
      caller: ctx.caller,
      providerConfigKey: ctx.providerConfigKey,
      connectionId: ctx.connectionId,
      provider: ctx.provider.name,
      operation: ctx.operation,
      candidate: { credentials, connectionConfig, metadata: null },
    };
    const verdict = await this.nats.call(ON_EVENT_REQUESTS.validateConnection, request, {
      timeoutMs: this.env.SWITCHBOARD_ON_EVENT_TIMEOUT_MS + VALIDATION_MARGIN_MS,
    });
    if (verdict.ok) return;
    const message = verdict.message ?? 'Connection failed validation';
    if (ctx.operation === 'override') await this.reconnectionFailed(ctx, message);
    throw new AuthConnectError('connection_validation_failed', message);
  }

  private async reconnectionFailed(ctx: FlowContext, description: string): Promise<void> {
    const id = randomUUID();
    const event = authEventSchema.parse({
      id,
      environmentId: ctx.caller.environmentId,
      connectionId: ctx.connectionId,
      providerConfigKey: ctx.providerConfigKey,
      provider: ctx.provider.name,
      operation: 'override',
      success: false,
      tags: ctx.session.tags,
      endUser: ctx.session.endUser,
      webhookUrlOverride: ctx.session.webhookUrlOverride ?? null,
      error: { type: 'connection_validation_failed', description },
      occurredAt: new Date().toISOString(),
    });
    try {
      await publishEvent(this.nc, EVENT_SUBJECTS.auth, id, event);
    } catch (error) {
      // The end user still learns why; only the customer's webhook is lost, and that is logged.
      this.logger.error(
        `the failed-reconnect webhook of ${ctx.providerConfigKey}/${ctx.connectionId} was not published: ${(error as Error).message}`,
      );
    }
  }
}
