import { createHash, randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import type { StartFlowRequest } from '@switchboard/contracts';
import type { ConnectDb } from '@switchboard/db';
import { AuthConnectError } from '../auth-connect.errors';
import { AUTH_CONNECT_ENV, type AuthConnectEnv } from '../config/env';
import { AUTH_DB } from '../database/database.module';
import {
  buildOAuth1AuthorizeUrl,
  interpolateParams,
  interpolateUrl,
  requestOAuth1RequestToken,
} from '../exchanges';
import { renameParams } from '../exchanges/oauth-param-names';
import { FlowContextService, type FlowContext, type OAuthClient } from './flow-context.service';
import { callbackUrlOf, type StateSecrets } from './flow-state';

/** The provider URL a redirect flow sends the browser to first, per auth mode. */
@Injectable()
export class AuthorizationUrls {
  constructor(
    @Inject(AUTH_DB) private readonly db: ConnectDb,
    @Inject(AUTH_CONNECT_ENV) private readonly env: AuthConnectEnv,
    private readonly contexts: FlowContextService,
  ) {}

  /** OAuth 1.0a: a request token first (kept in the state's secrets), then the provider's authorize URL. */
  async oauth1(
    ctx: FlowContext,
    req: StartFlowRequest,
    connectionConfig: Record<string, unknown>,
    state: string,
    secrets: StateSecrets,
  ): Promise<string> {
    const client = await this.contexts.oauthClient(ctx, req.clientOverride);
    if (client.isOverride) secrets.client = client;
    const callback = new URL(callbackUrlOf(this.env));
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
  async githubAppInstall(
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

  /** OAuth 2: the provider's authorization URL with the flow's state, PKCE challenge and scopes. */
  async oauth2(
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
    params.set('redirect_uri', callbackUrlOf(this.env));
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

export function refuseEndUserOverrides(req: StartFlowRequest): void {
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
