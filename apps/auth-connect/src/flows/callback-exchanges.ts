import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Credentials } from '@switchboard/contracts';
import type { Prisma } from '@switchboard/db';
import { AuthConnectError } from '../auth-connect.errors';
import { AUTH_CONNECT_ENV, type AuthConnectEnv } from '../config/env';
import {
  exchangeAuthorizationCode,
  exchangeGithubAppInstallation,
  exchangeGithubAppOAuth,
  exchangeOAuth1Verifier,
  runPostConnect,
  spendInstallationCode,
} from '../exchanges';
import { FlowContextService, type FlowContext, type OAuthClient } from './flow-context.service';
import {
  CallbackError,
  callbackUrlOf,
  isGithubApp,
  type CallbackExchange,
  type ExchangedCredentials,
  type StateSecrets,
} from './flow-state';

/** What the provider's return is exchanged for: a code, a verifier or an installation, into credentials. */
@Injectable()
export class CallbackExchanges {
  private readonly logger = new Logger('ConnectFlows');

  constructor(
    @Inject(AUTH_CONNECT_ENV) private readonly env: AuthConnectEnv,
    private readonly contexts: FlowContextService,
  ) {}

  /**
   * A code that came back with a callback we do not complete is spent (exchanged once, the token thrown
   * away), so nobody can replay it into a flow of their own: a refused callback (another browser, expired)
   * leaves no usable code behind, and neither does a GitHub App install redirect, whose user code is never
   * trusted for the installation check. The state itself stays for the browser it is bound to.
   */
  async spendStrayCode(
    row: Prisma.OAuthStateGetPayload<object>,
    query: Record<string, string>,
    secrets: StateSecrets,
  ): Promise<void> {
    const code = query['code'];
    if (!code || !['OAUTH2', 'APP', 'CUSTOM'].includes(row.authMode)) return;
    try {
      const found = await this.contexts.stateClient(row.environmentId, row.providerConfigKey);
      if (!found) return;
      const input = {
        provider: found.provider,
        client: secrets.client ?? found.client,
        code,
        redirectUri: callbackUrlOf(this.env),
        connectionConfig: row.connectionConfig as Record<string, unknown>,
      };
      if (isGithubApp(row.authMode)) await spendInstallationCode(input);
      else
        await exchangeAuthorizationCode({
          ...input,
          ...(secrets.codeVerifier ? { codeVerifier: secrets.codeVerifier } : {}),
        }).catch(() => undefined);
    } catch (error) {
      this.logger.warn(`could not spend the code of a refused callback: ${(error as Error).message}`);
    }
  }

  /** The credentials the provider's return is worth, per auth mode. */
  async exchange(
    ctx: FlowContext,
    query: Record<string, string>,
    secrets: StateSecrets,
    connectionConfig: Record<string, unknown>,
  ): Promise<ExchangedCredentials> {
    switch (ctx.provider.auth_mode) {
      case 'OAUTH2':
        return this.exchangeOAuth2({ ctx, query, secrets, connectionConfig });
      case 'OAUTH1':
        return this.exchangeOAuth1({ ctx, query, secrets, connectionConfig });
      case 'APP':
      case 'CUSTOM':
        return this.exchangeGithubApp({ ctx, query, secrets, connectionConfig });
      default:
        throw new AuthConnectError('invalid_auth_mode', `${ctx.provider.auth_mode} is not a redirect flow`);
    }
  }

  private async exchangeOAuth2(callback: CallbackExchange): Promise<ExchangedCredentials> {
    const { ctx, query, secrets, connectionConfig } = callback;
    const code = query['code'];
    if (!code) throw new CallbackError('callback_err', 'The provider sent no authorization code back');
    const oauthClient = await this.flowClient(ctx, secrets);
    const result = await exchangeAuthorizationCode({
      provider: ctx.provider,
      client: oauthClient,
      code,
      redirectUri: callbackUrlOf(this.env),
      ...(secrets.codeVerifier ? { codeVerifier: secrets.codeVerifier } : {}),
      connectionConfig,
      clientIsOverride: oauthClient.isOverride,
    });
    // Routing keys (the account a provider webhook names) come from the provider, with the new token.
    const fromProvider = await runPostConnect({
      provider: ctx.provider,
      auth: { accessToken: result.credentials.access_token },
      connectionConfig: { ...connectionConfig, ...result.connectionConfig },
    });
    return {
      credentials: result.credentials as unknown as Credentials,
      extraConfig: { ...result.connectionConfig, ...fromProvider },
    };
  }

  private async exchangeOAuth1(callback: CallbackExchange): Promise<ExchangedCredentials> {
    const { ctx, query, secrets, connectionConfig } = callback;
    const verifier = query['oauth_verifier'];
    if (!verifier || !secrets.requestToken)
      throw new CallbackError('callback_err', 'The provider sent no OAuth verifier back');
    if (query['oauth_token'] && query['oauth_token'] !== secrets.requestToken.key) {
      throw new CallbackError('callback_err', 'The provider sent back a different request token');
    }
    const oauthClient = await this.flowClient(ctx, secrets);
    const credentials = await exchangeOAuth1Verifier({
      provider: ctx.provider,
      consumer: { key: oauthClient.clientId, secret: oauthClient.clientSecret },
      requestToken: secrets.requestToken,
      verifier,
      connectionConfig,
    });
    return { credentials: credentials as unknown as Credentials, extraConfig: {} };
  }

  private async exchangeGithubApp(callback: CallbackExchange): Promise<ExchangedCredentials> {
    const { ctx, query, secrets, connectionConfig } = callback;
    // The installation the bound browser came back with first, never this return's query.
    const installationId = secrets.installationId;
    if (!installationId || !/^\d+$/.test(installationId)) {
      throw new CallbackError(
        'callback_err',
        'GitHub sent no installation back (was the installation approved?)',
      );
    }
    const integration = await this.contexts.integrationSecrets(ctx);
    if (!integration.appId || !integration.privateKey) {
      throw new AuthConnectError(
        'invalid_connection',
        `Integration "${ctx.providerConfigKey}" has no GitHub App configured`,
      );
    }
    const config = { ...connectionConfig, installation_id: installationId };
    const app = { appId: integration.appId, privateKey: integration.privateKey };
    // The install redirect's installation_id is only a claim anyone can edit: it is accepted once the
    // user token from this flow's own user authorization (PKCE) can see it (GET /user/installations).
    const code = query['code'];
    if (!code || !secrets.codeVerifier) {
      throw new CallbackError(
        'callback_err',
        'GitHub sent no user authorization back, so the installation cannot be checked',
      );
    }
    const input = {
      ...app,
      provider: ctx.provider,
      client: await this.flowClient(ctx, secrets),
      code,
      redirectUri: callbackUrlOf(this.env),
      codeVerifier: secrets.codeVerifier,
      connectionConfig: config,
    };
    const result =
      ctx.provider.auth_mode === 'APP'
        ? await exchangeGithubAppInstallation(input)
        : await exchangeGithubAppOAuth(input);
    return {
      credentials: result.credentials as unknown as Credentials,
      extraConfig: { installation_id: installationId, ...result.connectionConfig },
    };
  }

  /** The flow's override client, or the integration's own (looked up again, never kept in the state). */
  private async flowClient(ctx: FlowContext, secrets: StateSecrets): Promise<OAuthClient> {
    return secrets.client ?? (await this.contexts.oauthClient(ctx, {}));
  }
}
