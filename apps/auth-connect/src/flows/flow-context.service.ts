import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import {
  type Caller,
  type ConnectIntegrationDefaults,
  type ResolvedIntegration,
  AUTH_INTERNAL_REQUESTS,
} from '@switchboard/contracts';
import type { ConnectDb } from '@switchboard/db';
import { NatsRequester } from '@switchboard/messaging';
import type { AuthMode, ResolvedProvider } from '@switchboard/providers';
import { AuthConnectError } from '../auth-connect.errors';
import { ConnectSessionsService, type LoadedSession } from '../connect-sessions/connect-sessions.service';
import { AUTH_DB } from '../database/database.module';
import { ProvidersService } from '../providers/providers.service';
import { buildConnectionConfig } from './connection-config';

/** Everything a flow needs about one attempt: who, through which session, for which integration. */
export interface FlowContext {
  caller: Caller;
  session: LoadedSession;
  providerConfigKey: string;
  provider: ResolvedProvider;
  defaults: ConnectIntegrationDefaults | undefined;
  /** A new UUID v4, or the reconnect session's connection. */
  connectionId: string;
  operation: 'creation' | 'override';
}

export interface OAuthClient {
  clientId: string;
  clientSecret: string;
  /** The end user (or the session) brought this client; it is kept with the connection for refreshes. */
  isOverride: boolean;
}

@Injectable()
export class FlowContextService {
  constructor(
    @Inject(AUTH_DB) private readonly db: ConnectDb,
    private readonly sessions: ConnectSessionsService,
    private readonly providers: ProvidersService,
    private readonly nats: NatsRequester,
  ) {}

  /**
   * Opens a flow for an integration within a session, refusing what the session does not allow and
   * auth modes the route does not run (an API key posted to an OAuth integration, ...).
   */
  async open(
    caller: Caller,
    sessionId: number,
    providerConfigKey: string,
    modes: readonly AuthMode[],
  ): Promise<FlowContext> {
    const session = await this.sessions.load(caller, sessionId);
    return this.openFor(caller, session, providerConfigKey, modes);
  }

  async openFor(
    caller: Caller,
    session: LoadedSession,
    providerConfigKey: string,
    modes: readonly AuthMode[],
  ): Promise<FlowContext> {
    if (session.allowedIntegrations && !session.allowedIntegrations.includes(providerConfigKey)) {
      throw new AuthConnectError(
        'integration_not_allowed',
        `This connect session does not allow the integration "${providerConfigKey}"`,
      );
    }
    const integration = await this.db.integration.findUnique({
      where: {
        environmentId_uniqueKey: { environmentId: caller.environmentId, uniqueKey: providerConfigKey },
      },
    });
    if (!integration)
      throw new AuthConnectError(
        'unknown_provider_config',
        `Integration "${providerConfigKey}" does not exist`,
      );
    const provider = this.providers.find(integration.provider);
    if (!provider)
      throw new AuthConnectError(
        'unknown_provider_template',
        `Provider "${integration.provider}" is not in the catalog`,
      );
    if (!modes.includes(provider.auth_mode)) {
      throw new AuthConnectError(
        'invalid_auth_mode',
        `Integration "${providerConfigKey}" uses ${provider.auth_mode}; this route handles ${modes.join(', ')}`,
      );
    }
    return {
      caller,
      session,
      providerConfigKey,
      provider,
      defaults: session.defaults[providerConfigKey],
      connectionId: session.reconnectConnectionId ?? randomUUID(),
      operation: session.reconnectConnectionId ? 'override' : 'creation',
    };
  }

  connectionConfig(ctx: FlowContext, params: Record<string, string>): Record<string, unknown> {
    return buildConnectionConfig(ctx.provider, params, ctx.defaults);
  }

  /** The integration with its decrypted secrets (client secret, app private key), from the owner of that code. */
  async integrationSecrets(ctx: {
    caller: Pick<Caller, 'environmentId'>;
    providerConfigKey: string;
  }): Promise<ResolvedIntegration> {
    return this.nats.call(AUTH_INTERNAL_REQUESTS.resolveIntegration, {
      environmentId: ctx.caller.environmentId,
      uniqueKey: ctx.providerConfigKey,
    });
  }

  /**
   * The OAuth client of a flow. A value the session's backend set wins; an empty one in the session means
   * "the end user brings their own app", and then the page's values are required.
   */
  async oauthClient(
    ctx: FlowContext,
    typed: { clientId?: string | undefined; clientSecret?: string | undefined },
  ): Promise<OAuthClient> {
    const preset = ctx.defaults?.connection_config ?? {};
    const presetId = preset.oauth_client_id_override;
    const presetSecret = preset.oauth_client_secret_override;
    const endUserBrings = presetId === '' || presetSecret === '';
    const clientId = presetId || (endUserBrings ? typed.clientId : undefined);
    const clientSecret = presetSecret || (endUserBrings ? typed.clientSecret : undefined);
    if (endUserBrings && (!clientId || !clientSecret)) {
      throw new AuthConnectError(
        'invalid_connection',
        'This connection needs your own OAuth app: enter its client ID and client secret',
        [
          ...(!clientId
            ? [
                {
                  code: 'missing',
                  message: 'Client ID is required',
                  path: ['credentials', 'oauth_client_id_override'],
                },
              ]
            : []),
          ...(!clientSecret
            ? [
                {
                  code: 'missing',
                  message: 'Client secret is required',
                  path: ['credentials', 'oauth_client_secret_override'],
                },
              ]
            : []),
        ],
      );
    }
    if (clientId && clientSecret) return { clientId, clientSecret, isOverride: true };
    const integration = await this.integrationSecrets(ctx);
    const id = clientId ?? integration.clientId;
    const secret = integration.clientSecret;
    if (!id || !secret) {
      throw new AuthConnectError(
        'invalid_connection',
        `Integration "${ctx.providerConfigKey}" has no OAuth client ID and secret yet`,
      );
    }
    return { clientId: id, clientSecret: secret, isOverride: false };
  }

  /**
   * The provider and the integration's own OAuth client behind a pending state, without its session (which
   * may be gone): enough to spend a code that came back with it. Undefined when either is missing.
   */
  async stateClient(
    environmentId: number,
    providerConfigKey: string,
  ): Promise<{ provider: ResolvedProvider; client: OAuthClient } | undefined> {
    const row = await this.db.integration.findUnique({
      where: { environmentId_uniqueKey: { environmentId, uniqueKey: providerConfigKey } },
      select: { provider: true },
    });
    const provider = row ? this.providers.find(row.provider) : undefined;
    if (!provider) return undefined;
    const integration = await this.integrationSecrets({ caller: { environmentId }, providerConfigKey });
    if (!integration.clientId || !integration.clientSecret) return undefined;
    return {
      provider,
      client: { clientId: integration.clientId, clientSecret: integration.clientSecret, isOverride: false },
    };
  }
}
