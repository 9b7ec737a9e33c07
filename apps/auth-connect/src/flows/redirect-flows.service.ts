import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  SwitchboardError,
  type BindFlowRequest,
  type CallbackOutcome,
  type CallbackReply,
  type Credentials,
  type StartedFlow,
  type StartFlowRequest,
} from '@switchboard/contracts';
import { EnvelopeCipher } from '@switchboard/crypto';
import { Prisma, type ConnectDb } from '@switchboard/db';
import type { AuthMode } from '@switchboard/providers';
import { AuthConnectError } from '../auth-connect.errors';
import { AUTH_CONNECT_ENV, type AuthConnectEnv } from '../config/env';
import { ConnectSessionsService } from '../connect-sessions/connect-sessions.service';
import { AUTH_DB } from '../database/database.module';
import {
  buildOAuth1AuthorizeUrl,
  exchangeAuthorizationCode,
  exchangeGithubAppInstallation,
  exchangeGithubAppOAuth,
  exchangeOAuth1Verifier,
  interpolateParams,
  interpolateUrl,
  ProviderExchangeError,
  requestOAuth1RequestToken,
  runPostConnect,
  spendInstallationCode,
} from '../exchanges';
import { renameParams } from '../exchanges/oauth-param-names';
import { CompletionService } from './completion.service';
import { FlowContextService, type FlowContext, type OAuthClient } from './flow-context.service';

export const REDIRECT_MODES: readonly AuthMode[] = ['OAUTH2', 'OAUTH1', 'APP', 'CUSTOM'];

/** How long an end user may take at the provider's consent screen. */
const STATE_TTL_MS = 15 * 60 * 1000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What a pending flow keeps encrypted until the provider sends the browser back. */
interface StateSecrets {
  codeVerifier?: string;
  /** Only an override client is kept; the integration's own is looked up again at the callback. */
  client?: OAuthClient;
  requestToken?: { key: string; secret: string };
  /** SHA-256 of the nonce cookie of the browser this flow belongs to; the callback must present it. */
  browserBinding?: string;
  /** Kept until the flow is bound to a browser (the launch step answers with it). */
  providerUrl?: string;
  /** The @nangohq/frontend WebSocket that hears the outcome (the gateway claimed it for this session). */
  wsClientId?: string;
  /**
   * APP and CUSTOM: the installation the bound browser came back with. Set once; the next return of that browser is
   * the user authorization (PKCE with `codeVerifier`) that must be able to see it.
   */
  installationId?: string;
}

/** What the provider's return brings to the exchange: the flow, its query and the state's secrets. */
interface CallbackExchange {
  ctx: FlowContext;
  query: Record<string, string>;
  secrets: StateSecrets;
  connectionConfig: Record<string, unknown>;
}

interface ExchangedCredentials {
  credentials: Credentials;
  extraConfig: Record<string, unknown>;
}

const stateAad = (id: string) => `auth.oauth_states:${id}:secrets`;

class CallbackError extends Error {
  constructor(
    readonly errorType: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Flows that send the browser to the provider and get it back: OAuth 2 authorization code (PKCE S256,
 * single-use state), OAuth 1.0a, GitHub App installation (APP) and GitHub App OAuth (CUSTOM).
 */
@Injectable()
export class RedirectFlowsService {
  private readonly logger = new Logger('ConnectFlows');

  constructor(
    @Inject(AUTH_DB) private readonly db: ConnectDb,
    @Inject(AUTH_CONNECT_ENV) private readonly env: AuthConnectEnv,
    private readonly cipher: EnvelopeCipher,
    private readonly contexts: FlowContextService,
    private readonly sessions: ConnectSessionsService,
    private readonly completion: CompletionService,
  ) {}

  get callbackUrl(): string {
    return `${this.env.SWITCHBOARD_SERVER_URL.replace(/\/$/, '')}/oauth/callback`;
  }

  async start(req: StartFlowRequest): Promise<StartedFlow> {
    refuseEndUserOverrides(req);
    const ctx = await this.contexts.open(req.caller, req.sessionId, req.providerConfigKey, REDIRECT_MODES);
    const connectionConfig = this.contexts.connectionConfig(ctx, req.params);
    const state = randomUUID();
    const secrets: StateSecrets = {};
    let url: string;

    switch (ctx.provider.auth_mode) {
      case 'OAUTH2': {
        const client = await this.contexts.oauthClient(ctx, req.clientOverride);
        if (client.isOverride) secrets.client = client;
        if (!ctx.provider.disable_pkce) secrets.codeVerifier = randomBytes(32).toString('base64url');
        url = await this.oauth2AuthorizationUrl(
          ctx,
          req,
          connectionConfig,
          client,
          state,
          secrets.codeVerifier,
        );
        break;
      }
      case 'OAUTH1':
        url = await this.oauth1AuthorizeUrl(ctx, req, connectionConfig, state, secrets);
        break;
      case 'APP':
      case 'CUSTOM':
        url = await this.githubAppInstallUrl(ctx, connectionConfig, state, secrets);
        break;
      default:
        throw new AuthConnectError('invalid_auth_mode', `${ctx.provider.auth_mode} is not a redirect flow`);
    }

    if (req.browserBinding) secrets.browserBinding = req.browserBinding;
    else secrets.providerUrl = url;
    if (req.wsClientId) secrets.wsClientId = req.wsClientId;
    await this.saveState(ctx, state, connectionConfig, secrets);
    return { url, state };
  }

  /**
   * Binds a flow started without a browser (the connect page's POST) to the first browser that opens its
   * launch URL. Once bound it stays bound: a second browser gets a refusal, not the provider URL.
   */
  async bind(req: BindFlowRequest): Promise<{ url: string }> {
    const row = await this.db.oAuthState.findUnique({ where: { id: req.state } });
    if (!row || row.expiresAt.getTime() <= Date.now()) {
      throw new AuthConnectError(
        'not_found',
        'This authorization is unknown or expired; start again from the connect page',
      );
    }
    const secrets = this.cipher.decryptJson<StateSecrets>(row.secrets, stateAad(row.id));
    if (secrets.browserBinding || !secrets.providerUrl) {
      throw new AuthConnectError(
        'conflict',
        'This authorization was already opened; start again from the connect page',
      );
    }
    const url = secrets.providerUrl;
    const bound: StateSecrets = { ...secrets, browserBinding: req.browserBinding };
    delete bound.providerUrl;
    // Compare-and-set on the sealed value: of two browsers racing for the same launch URL, one wins.
    const { count } = await this.db.oAuthState.updateMany({
      where: { id: row.id, secrets: row.secrets },
      data: { secrets: this.cipher.encryptJson(bound, stateAad(row.id)) },
    });
    if (count !== 1) {
      throw new AuthConnectError(
        'conflict',
        'This authorization was already opened; start again from the connect page',
      );
    }
    return { url };
  }

  /**
   * The provider sent the browser back. Only the browser the flow is bound to may use (and so spend) its
   * state: a callback without the binding cookie is refused and leaves the state to its owner. The state
   * is then consumed (deleted, so a replayed callback finds nothing), the code or installation exchanged
   * and the connection stored. A GitHub App install coming back is not the end: the same browser is sent
   * on to the app's user authorization (`continueTo`). Failures come back as an outcome for the result
   * page, never as a thrown error: the page must tell the end user what happened.
   */
  async callback(query: Record<string, string>, browserNonce: string | undefined): Promise<CallbackReply> {
    let pending: Prisma.OAuthStateGetPayload<object> | undefined;
    let notify: CallbackOutcome['notify'];
    try {
      pending = await this.findState(query['state']);
      const secrets = this.cipher.decryptJson<StateSecrets>(pending.secrets, stateAad(pending.id));
      if (secrets.wsClientId)
        notify = { wsClientId: secrets.wsClientId, sessionId: pending.connectSessionId };
      // Login CSRF / connection fixation: a state is only good in the browser that started the flow. A
      // provider URL passed to someone else comes back without (or with another) nonce cookie.
      if (!sameBinding(secrets.browserBinding, browserNonce)) {
        await this.spendStrayCode(pending, query, secrets);
        throw new CallbackError(
          'state_err',
          'This authorization was not started in this browser; start again from the connect page',
        );
      }
      if (pending.expiresAt.getTime() <= Date.now()) {
        await this.spendStrayCode(pending, query, secrets);
        await this.db.oAuthState.deleteMany({ where: { id: pending.id } });
        throw new CallbackError(
          'state_err',
          'This authorization took too long and expired; start again from the connect page',
        );
      }
      const opened = await this.sessions.loadForCallback(pending.connectSessionId);
      if (!opened) {
        await this.spendStrayCode(pending, query, secrets);
        await this.db.oAuthState.deleteMany({ where: { id: pending.id } });
        throw new CallbackError('state_err', 'The connect session of this authorization no longer exists');
      }
      const ctx: FlowContext = {
        ...(await this.contexts.openFor(opened.caller, opened.session, pending.providerConfigKey, [
          pending.authMode as AuthMode,
        ])),
        connectionId: pending.connectionId,
      };
      if (isGithubApp(ctx.provider.auth_mode) && !secrets.installationId && !query['error']) {
        return await this.continueToUserAuthorization(ctx, pending, secrets, query);
      }
      await this.consumeState(pending);
      if (query['error']) {
        const description = query['error_description'] ? `: ${query['error_description'].slice(0, 300)}` : '';
        throw new CallbackError(
          'callback_err',
          `${ctx.provider.display_name} declined the authorization (${query['error'].slice(0, 100)})${description}`,
        );
      }
      const connectionConfig = pending.connectionConfig as Record<string, unknown>;
      const { credentials, extraConfig } = await this.exchange(ctx, query, secrets, connectionConfig);
      const result = await this.completion.complete(ctx, credentials, {
        ...connectionConfig,
        ...extraConfig,
      });
      return {
        ok: true,
        ...result,
        isPending: false,
        displayName: ctx.provider.display_name,
        ...(notify ? { notify } : {}),
      };
    } catch (error) {
      const outcome = this.failure(error, pending);
      return notify ? { ...outcome, notify } : outcome;
    }
  }

  private async findState(state: string | undefined): Promise<Prisma.OAuthStateGetPayload<object>> {
    if (!state || !UUID.test(state))
      throw new CallbackError('state_err', 'The authorization came back without a valid state');
    const row = await this.db.oAuthState.findUnique({ where: { id: state } });
    if (!row) {
      throw new CallbackError(
        'state_err',
        'This authorization was already used or is unknown; start again from the connect page',
      );
    }
    return row;
  }

  /** Single use: of two callbacks of the bound browser racing for one state, one wins. */
  private async consumeState(row: Prisma.OAuthStateGetPayload<object>): Promise<void> {
    const { count } = await this.db.oAuthState.deleteMany({ where: { id: row.id, secrets: row.secrets } });
    if (count !== 1) {
      throw new CallbackError(
        'state_err',
        'This authorization was already used or is unknown; start again from the connect page',
      );
    }
  }

  /**
   * A code that came back with a callback we do not complete is spent (exchanged once, the token thrown
   * away), so nobody can replay it into a flow of their own: a refused callback (another browser, expired)
   * leaves no usable code behind, and neither does a GitHub App install redirect, whose user code is never
   * trusted for the installation check. The state itself stays for the browser it is bound to.
   */
  private async spendStrayCode(
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
        redirectUri: this.callbackUrl,
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

  /**
   * The installation came back to the bound browser: it is remembered, any user code sent with it is
   * spent, and the browser goes on to the app's user authorization with this flow's PKCE challenge and
   * the same state. Only the code that comes back from there, with the verifier only this flow holds, can
   * check the installation.
   */
  private async continueToUserAuthorization(
    ctx: FlowContext,
    row: Prisma.OAuthStateGetPayload<object>,
    secrets: StateSecrets,
    query: Record<string, string>,
  ): Promise<CallbackReply> {
    const installationId = query['installation_id'];
    await this.spendStrayCode(row, query, secrets);
    if (!installationId || !/^\d+$/.test(installationId)) {
      await this.db.oAuthState.deleteMany({ where: { id: row.id } });
      throw new CallbackError(
        'callback_err',
        'GitHub sent no installation back (was the installation approved?)',
      );
    }
    const template = ctx.provider.installation_check?.authorization_url;
    if (!template || !secrets.codeVerifier) {
      await this.db.oAuthState.deleteMany({ where: { id: row.id } });
      throw new AuthConnectError(
        'invalid_connection',
        `${ctx.provider.name} has no installation_check.authorization_url in the provider catalog`,
      );
    }
    const client = secrets.client ?? (await this.contexts.oauthClient(ctx, {}));
    const next: StateSecrets = { ...secrets, installationId };
    const { count } = await this.db.oAuthState.updateMany({
      where: { id: row.id, secrets: row.secrets },
      data: { secrets: this.cipher.encryptJson(next, stateAad(row.id)) },
    });
    if (count !== 1) {
      throw new CallbackError(
        'state_err',
        'This authorization was already used or is unknown; start again from the connect page',
      );
    }
    const target = interpolateUrl(template, row.connectionConfig as Record<string, unknown>, ctx.provider);
    target.searchParams.set('client_id', client.clientId);
    target.searchParams.set('redirect_uri', this.callbackUrl);
    target.searchParams.set('state', row.id);
    target.searchParams.set(
      'code_challenge',
      createHash('sha256').update(secrets.codeVerifier).digest('base64url'),
    );
    target.searchParams.set('code_challenge_method', 'S256');
    return { continueTo: target.toString() };
  }

  private async exchange(
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
      redirectUri: this.callbackUrl,
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
      redirectUri: this.callbackUrl,
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

  /** OAuth 1.0a: a request token first (kept in the state's secrets), then the provider's authorize URL. */
  private async oauth1AuthorizeUrl(
    ctx: FlowContext,
    req: StartFlowRequest,
    connectionConfig: Record<string, unknown>,
    state: string,
    secrets: StateSecrets,
  ): Promise<string> {
    const client = await this.contexts.oauthClient(ctx, req.clientOverride);
    if (client.isOverride) secrets.client = client;
    const callback = new URL(this.callbackUrl);
    callback.searchParams.set('state', state);
    const requestToken = await requestOAuth1RequestToken({
      provider: ctx.provider,
      consumer: { key: client.clientId, secret: client.clientSecret },
      callbackUrl: callback.toString(),
      connectionConfig,
    });
    secrets.requestToken = { key: requestToken.key, secret: requestToken.secret };
    const scopes = await this.scopes(ctx);
    return buildOAuth1AuthorizeUrl({
      provider: ctx.provider,
      requestToken: requestToken.key,
      scopes,
      authorizationParams: ctx.defaults?.authorization_params ?? req.authorizationParams,
      connectionConfig,
    });
  }

  /** APP and CUSTOM: the GitHub App's installation page; the user authorization after it uses PKCE. */
  private async githubAppInstallUrl(
    ctx: FlowContext,
    connectionConfig: Record<string, unknown>,
    state: string,
    secrets: StateSecrets,
  ): Promise<string> {
    const integration = await this.contexts.integrationSecrets(ctx);
    if (!integration.appLink || !integration.appId || !integration.privateKey) {
      throw new AuthConnectError(
        'invalid_connection',
        `Integration "${ctx.providerConfigKey}" has no GitHub App configured yet`,
      );
    }
    connectionConfig['appPublicLink'] = integration.appLink.replace(/\/$/, '');
    const template = ctx.provider.authorization_url ?? '${connectionConfig.appPublicLink}/installations/new';
    const target = interpolateUrl(template, connectionConfig, ctx.provider);
    target.searchParams.set('state', state);
    const url = target.toString();
    // The installation is checked with a user code this flow asks for itself, after the install.
    if (!ctx.provider.installation_check?.authorization_url) {
      throw new AuthConnectError(
        'invalid_connection',
        `${ctx.provider.name} has no installation_check.authorization_url in the provider catalog`,
      );
    }
    secrets.codeVerifier = randomBytes(32).toString('base64url');
    return url;
  }

  /** Keeps the pending flow (its secrets encrypted) and drops the environment's expired ones. */
  private async saveState(
    ctx: FlowContext,
    state: string,
    connectionConfig: Record<string, unknown>,
    secrets: StateSecrets,
  ): Promise<void> {
    const now = Date.now();
    await this.db.oAuthState.deleteMany({
      where: { environmentId: ctx.caller.environmentId, expiresAt: { lt: new Date(now) } },
    });
    await this.db.oAuthState.create({
      data: {
        id: state,
        environmentId: ctx.caller.environmentId,
        connectSessionId: ctx.session.id,
        providerConfigKey: ctx.providerConfigKey,
        provider: ctx.provider.name,
        authMode: ctx.provider.auth_mode,
        connectionId: ctx.connectionId,
        connectionConfig: connectionConfig as Prisma.InputJsonValue,
        secrets: this.cipher.encryptJson(secrets, stateAad(state)),
        expiresAt: new Date(now + STATE_TTL_MS),
      },
    });
  }

  private async oauth2AuthorizationUrl(
    ctx: FlowContext,
    req: StartFlowRequest,
    connectionConfig: Record<string, unknown>,
    client: OAuthClient,
    state: string,
    codeVerifier: string | undefined,
  ): Promise<string> {
    const { provider } = ctx;
    if (!provider.authorization_url)
      throw new AuthConnectError('invalid_connection', `${provider.name} has no authorization_url`);
    const target = interpolateUrl(provider.authorization_url, connectionConfig, provider);
    const params = new Map<string, string>([['response_type', 'code']]);
    const scopes = await this.scopes(ctx);
    if (scopes.length > 0) params.set('scope', scopes.join(provider.scope_separator ?? ' '));
    for (const [key, value] of Object.entries(
      interpolateParams(provider.authorization_params, connectionConfig),
    ))
      params.set(key, value);
    // The session's authorization_params replace the page's (the customer's backend decides).
    for (const [key, value] of Object.entries(
      ctx.defaults?.authorization_params ?? req.authorizationParams,
    )) {
      if (!PROTECTED_AUTHORIZATION_PARAMS.has(key)) params.set(key, value);
    }
    const userScope = ctx.defaults?.user_scopes;
    if (userScope) params.set('user_scope', userScope);
    params.set('client_id', client.clientId);
    params.set('redirect_uri', this.callbackUrl);
    params.set('state', state);
    if (codeVerifier) {
      params.set('code_challenge', createHash('sha256').update(codeVerifier).digest('base64url'));
      params.set('code_challenge_method', 'S256');
    }
    const named = renameParams(Object.fromEntries(params), provider.authorization_param_names);
    for (const key of Object.keys(named)) target.searchParams.delete(key);
    // Encoded by hand: URLSearchParams writes spaces as "+", which some providers do not read as a space in scopes.
    const added = Object.entries(named)
      .map(([key, value]) => `${encodeURIComponent(key)}=${encodeURIComponent(value)}`)
      .join('&');
    target.search = target.search ? `${target.search.slice(1)}&${added}` : added;
    return target.toString();
  }

  /** The session's `oauth_scopes_override`, else the integration's scopes, else the provider's defaults. */
  private async scopes(ctx: FlowContext): Promise<string[]> {
    const split = (value: string) =>
      value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
    const override = ctx.defaults?.connection_config?.oauth_scopes_override;
    if (override !== undefined) return split(override);
    const integration = await this.db.integration.findUnique({
      where: {
        environmentId_uniqueKey: {
          environmentId: ctx.caller.environmentId,
          uniqueKey: ctx.providerConfigKey,
        },
      },
      select: { scopes: true },
    });
    if (integration?.scopes) return split(integration.scopes);
    return ctx.provider.default_scopes ?? [];
  }

  private failure(
    error: unknown,
    pending: { providerConfigKey: string; connectionId: string } | undefined,
  ): CallbackOutcome {
    const where = {
      providerConfigKey: pending?.providerConfigKey ?? null,
      connectionId: pending?.connectionId ?? null,
    };
    if (error instanceof CallbackError)
      return { ok: false, ...where, errorType: error.errorType, message: error.message };
    if (error instanceof ProviderExchangeError)
      return { ok: false, ...where, errorType: 'token_err', message: error.message };
    if (error instanceof SwitchboardError) {
      const errorType =
        error.code === 'invalid_connection' || error.code === 'connection_validation_failed'
          ? 'connection_validation_failed'
          : error.code === 'unknown_provider_config'
            ? 'unknown_config_key'
            : 'unknown_err';
      return { ok: false, ...where, errorType, message: error.message };
    }
    this.logger.error(`OAuth callback failed: ${(error as Error)?.stack ?? String(error)}`);
    return {
      ok: false,
      ...where,
      errorType: 'unknown_err',
      message: 'An unexpected error occurred; please try again',
    };
  }
}

/** GitHub App installs (APP, and CUSTOM: GitHub App OAuth): checked by a user authorization of their own. */
function isGithubApp(mode: string): boolean {
  return mode === 'APP' || mode === 'CUSTOM';
}

function sameBinding(binding: string | undefined, nonce: string | undefined): boolean {
  if (!binding || !nonce) return false;
  const presented = createHash('sha256').update(nonce).digest();
  const expected = Buffer.from(binding, 'base64url');
  return expected.length === presented.length && timingSafeEqual(expected, presented);
}

/** Parameters a page or session must not replace: they carry the flow's own security. */
const PROTECTED_AUTHORIZATION_PARAMS = new Set([
  'client_id',
  'redirect_uri',
  'state',
  'code_challenge',
  'code_challenge_method',
  'response_type',
]);

/**
 * What the end user's browser may not choose: the flow's own parameters, and scopes beyond what the
 * integration (or the session its backend created) grants. Refused, not dropped, so the page says why.
 */
const END_USER_FORBIDDEN_PARAMS = new Set([...PROTECTED_AUTHORIZATION_PARAMS, 'scope', 'user_scope']);

function refuseEndUserOverrides(req: StartFlowRequest): void {
  const errors = Object.keys(req.authorizationParams)
    .filter((key) => END_USER_FORBIDDEN_PARAMS.has(key.toLowerCase()))
    .map((key) => ({
      code: 'custom',
      message: `${key} is set by the integration, not the connect page`,
      path: ['authorization_params', key],
    }));
  if (req.userScope !== undefined) {
    errors.push({
      code: 'custom',
      message: 'user_scope is set by the integration or the connect session, not the connect page',
      path: ['user_scope'],
    });
  }
  if (errors.length > 0) {
    throw new AuthConnectError(
      'invalid_connection',
      'The connect page may not choose the authorization parameters the integration sets',
      errors,
    );
  }
}
