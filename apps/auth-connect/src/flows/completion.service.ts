import { Inject, Injectable, Logger } from '@nestjs/common';
import { type Credentials, type FlowResult, VAULT_REQUESTS } from '@switchboard/contracts';
import { Prisma, type ConnectDb } from '@switchboard/db';
import { NatsRequester } from '@switchboard/messaging';
import { connectionConfigValueProblems } from '@switchboard/providers';
import { AuthConnectError } from '../auth-connect.errors';
import { AUTH_CONNECT_ENV, type AuthConnectEnv } from '../config/env';
import { AUTH_DB } from '../database/database.module';
import type { FlowContext } from './flow-context.service';

/**
 * Beyond the validate-connection scripts' own budget: the runtime's abort grace, loading and answering
 * (the vault's wait), then storing.
 */
const STORE_MARGIN_MS = 10_000;

/**
 * The last step of every flow: the vault validates the new credentials with the integration's
 * validate-connection scripts and stores the connection (and publishes the auth event for the webhook
 * relay; a refused reconnect sends a failed `override` one); then the end user and the fact that a connect
 * session created this connection are recorded here (the latter is what makes it eligible for a reconnect
 * session), and the connect session ends.
 */
@Injectable()
export class CompletionService {
  private readonly logger = new Logger('ConnectFlows');

  constructor(
    @Inject(AUTH_DB) private readonly db: ConnectDb,
    private readonly nats: NatsRequester,
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
    // The vault runs the integration's validate-connection scripts first: a refusal stores nothing.
    await this.nats.call(
      VAULT_REQUESTS.store,
      {
        caller: ctx.caller,
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
      },
      { timeoutMs: this.env.SWITCHBOARD_ON_EVENT_TIMEOUT_MS + STORE_MARGIN_MS },
    );

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
}
