import { Injectable } from '@nestjs/common';
import type { Credentials, FlowResult, SubmitFlowRequest } from '@switchboard/contracts';
import type { AuthMode } from '@switchboard/providers';
import { AuthConnectError } from '../auth-connect.errors';
import { CompletionService } from './completion.service';
import {
  billLogin,
  buildTbaCredentials,
  credentialFieldsOf,
  mintJwt,
  requestClientCredentialsToken,
  requestTwoStepToken,
  runPostConnect,
  twoStepConnectionConfig,
} from '../exchanges';
import type { TypedCredentials } from '../exchanges/credential-placement';
import { clientCertificateFor } from '../exchanges/client-certificate';
import { checkCredentials } from './credential-check';
import { FlowContextService, type FlowContext } from './flow-context.service';

const MODES: Record<SubmitFlowRequest['mode'], readonly AuthMode[]> = {
  API_KEY: ['API_KEY'],
  BASIC: ['BASIC'],
  OAUTH2_CC: ['OAUTH2_CC'],
  TBA: ['TBA'],
  JWT: ['JWT'],
  TWO_STEP: ['TWO_STEP'],
  BILL: ['BILL'],
  SIGNATURE: ['SIGNATURE'],
};

/**
 * Flows where the end user types credentials into a form: API key, basic, OAuth 2 client credentials,
 * NetSuite-style token-based auth, a key Switchboard signs JWTs with, a token endpoint's login (TWO_STEP,
 * Bill) and WSSE. Each posts them once; the connection is stored only when they work.
 */
@Injectable()
export class FormFlowsService {
  constructor(
    private readonly contexts: FlowContextService,
    private readonly completion: CompletionService,
  ) {}

  async submit(req: SubmitFlowRequest): Promise<FlowResult> {
    const ctx = await this.contexts.open(req.caller, req.sessionId, req.providerConfigKey, MODES[req.mode]);
    const connectionConfig = this.contexts.connectionConfig(ctx, req.params);
    const { credentials, extraConfig } = await this.credentialsFor(ctx, req, connectionConfig);
    return this.completion.complete(ctx, credentials, { ...connectionConfig, ...extraConfig });
  }

  /**
   * An API key or basic pair: checked against the provider, then the catalog's post-connect calls made
   * with it (the account a webhook names), all before anything is stored.
   */
  private async typedCredentials(
    ctx: FlowContext,
    typed: TypedCredentials,
    connectionConfig: Record<string, unknown>,
  ): Promise<{ credentials: Credentials; extraConfig: Record<string, unknown> }> {
    await checkCredentials(ctx.provider, typed, connectionConfig);
    const extraConfig = ctx.provider.post_connect
      ? await runPostConnect({ provider: ctx.provider, auth: { typed }, connectionConfig })
      : {};
    return { credentials: typed, extraConfig };
  }

  private async credentialsFor(
    ctx: FlowContext,
    req: SubmitFlowRequest,
    connectionConfig: Record<string, unknown>,
  ): Promise<{ credentials: Credentials; extraConfig: Record<string, unknown> }> {
    switch (req.mode) {
      case 'API_KEY':
        return this.typedCredentials(ctx, { type: 'API_KEY', apiKey: req.body.apiKey }, connectionConfig);
      case 'BASIC':
        return this.typedCredentials(
          ctx,
          { type: 'BASIC', username: req.body.username, password: req.body.password },
          connectionConfig,
        );
      case 'OAUTH2_CC': {
        const override = ctx.defaults?.connection_config?.oauth_scopes_override;
        const scopes = override ? override.split(/[\s,]+/).filter(Boolean) : [];
        const clientCertificate = clientCertificateFor(ctx.provider, req.body);
        const result = await requestClientCredentialsToken({
          provider: ctx.provider,
          client: { clientId: req.body.client_id, clientSecret: req.body.client_secret ?? '' },
          ...(clientCertificate ? { clientCertificate } : {}),
          connectionConfig,
          ...(scopes.length > 0 ? { scopes } : {}),
        });
        // A refresh asks for the same scopes (it reads them from the connection config, as Nango stores them).
        const extraConfig =
          scopes.length > 0 ? { ...result.connectionConfig, oauth_scopes: scopes } : result.connectionConfig;
        return { credentials: result.credentials as Credentials, extraConfig };
      }
      case 'TBA': {
        const credentials = buildTbaCredentials(ctx.provider, req.body, connectionConfig);
        if (!credentials.config_override) {
          const integration = await this.contexts.integrationSecrets(ctx);
          if (!integration.clientId || !integration.clientSecret) {
            throw new AuthConnectError(
              'invalid_connection',
              `Integration "${ctx.providerConfigKey}" has no consumer key and secret yet`,
            );
          }
        }
        return { credentials: credentials as unknown as Credentials, extraConfig: {} };
      }
      case 'JWT': {
        const fields = credentialFieldsOf(ctx.provider, req.body);
        return { credentials: await mintJwt(ctx.provider, fields, connectionConfig), extraConfig: {} };
      }
      case 'TWO_STEP': {
        const fields = credentialFieldsOf(ctx.provider, req.body);
        const credentials = await requestTwoStepToken({ provider: ctx.provider, fields, connectionConfig });
        return { credentials, extraConfig: twoStepConnectionConfig(ctx.provider, credentials.raw) };
      }
      case 'BILL': {
        const credentials = await billLogin({ provider: ctx.provider, login: req.body });
        return { credentials, extraConfig: {} };
      }
      case 'SIGNATURE': {
        // The proxy computes a fresh WSSE digest for every request from these; nothing to call now.
        const credentials = {
          type: 'SIGNATURE' as const,
          username: req.body.username,
          password: req.body.password,
        };
        return { credentials, extraConfig: {} };
      }
    }
  }
}
