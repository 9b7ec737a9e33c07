import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  SwitchboardError,
  type BindFlowRequest,
  type CallbackOutcome,
  type CallbackReply,
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
import { interpolateUrl, ProviderExchangeError } from '../exchanges';
import { AuthorizationUrls, refuseEndUserOverrides } from './authorization-urls';
import { CallbackExchanges } from './callback-exchanges';
import { CompletionService } from './completion.service';
import { FlowContextService, type FlowContext } from './flow-context.service';
import {
  CallbackError,
  callbackUrlOf,
  isGithubApp,
  sameBinding,
  stateAad,
  type StateSecrets,
} from './flow-state';

export const REDIRECT_MODES: readonly AuthMode[] = ['OAUTH2', 'OAUTH1', 'APP', 'CUSTOM'];

/** How long an end user may take at the provider's consent screen. */
const STATE_TTL_MS = 15 * 60 * 1000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

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
    private readonly urls: AuthorizationUrls,
    private readonly exchanges: CallbackExchanges,
  ) {}

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
        url = await this.urls.oauth2(ctx, req, connectionConfig, client, state, secrets.codeVerifier);
        break;
      }
      case 'OAUTH1':
        url = await this.urls.oauth1(ctx, req, connectionConfig, state, secrets);
        break;
      case 'APP':
      case 'CUSTOM':
        url = await this.urls.githubAppInstall(ctx, connectionConfig, state, secrets);
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
        await this.exchanges.spendStrayCode(pending, query, secrets);
        throw new CallbackError(
          'state_err',
          'This authorization was not started in this browser; start again from the connect page',
        );
      }
      if (pending.expiresAt.getTime() <= Date.now()) {
        await this.exchanges.spendStrayCode(pending, query, secrets);
        await this.db.oAuthState.deleteMany({ where: { id: pending.id } });
        throw new CallbackError(
          'state_err',
          'This authorization took too long and expired; start again from the connect page',
        );
      }
      const opened = await this.sessions.loadForCallback(pending.connectSessionId);
      if (!opened) {
        await this.exchanges.spendStrayCode(pending, query, secrets);
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
      const { credentials, extraConfig } = await this.exchanges.exchange(
        ctx,
        query,
        secrets,
        connectionConfig,
      );
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
    await this.exchanges.spendStrayCode(row, query, secrets);
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
    target.searchParams.set('redirect_uri', callbackUrlOf(this.env));
    target.searchParams.set('state', row.id);
    target.searchParams.set(
      'code_challenge',
      createHash('sha256').update(secrets.codeVerifier).digest('base64url'),
    );
    target.searchParams.set('code_challenge_method', 'S256');
    return { continueTo: target.toString() };
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
