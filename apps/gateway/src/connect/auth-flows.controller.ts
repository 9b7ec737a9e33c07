import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query, Req, Res } from '@nestjs/common';
import {
  apiKeyFlowBodySchema,
  basicFlowBodySchema,
  billFlowBodySchema,
  credentialFieldsFlowBodySchema,
  signatureFlowBodySchema,
  clientCredentialsFlowBodySchema,
  flowSubmitQuerySchema,
  oauthConnectBodySchema,
  oauthConnectQuerySchema,
  SwitchboardError,
  tbaFlowBodySchema,
  uniqueKeySchema,
  type CallbackOutcome,
  type FlowResult,
  type StartedFlow,
  type SubmitFlowMode,
  CONNECT_FLOW_REQUESTS,
  type NatsRequestOf,
} from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { Public, RequireSessionQuery } from '../access/route-access';
import { GATEWAY_ENV, type GatewayEnv } from '../config/env';
import { statusForCode } from '../http/error-status';
import { parseParams, parseQuery } from '../http/validation';
import { createZodDto } from 'nestjs-zod';
import { renderCallbackPage } from './callback-page';
import { clearedFlowCookies, flowCookies, isFlowState, newBrowserNonce, readFlowNonce } from './flow-cookie';
import { OAuthSockets } from './oauth-sockets';
import { sessionOf } from './session-of';

const keyParams = z.object({ providerConfigKey: uniqueKeySchema });
const launchParams = z.object({ state: z.uuid() });

class KeyParamsDto extends createZodDto(keyParams) {}
class TokenOnlyQueryDto extends createZodDto(z.strictObject({ connect_session_token: z.string() })) {}
class OAuthConnectBodyDto extends createZodDto(oauthConnectBodySchema.default({})) {}
class FlowSubmitQueryDto extends createZodDto(flowSubmitQuerySchema) {}
class ApiKeyFlowBodyDto extends createZodDto(apiKeyFlowBodySchema) {}
class BasicFlowBodyDto extends createZodDto(basicFlowBodySchema) {}
class ClientCredentialsFlowBodyDto extends createZodDto(clientCredentialsFlowBodySchema) {}
class TbaFlowBodyDto extends createZodDto(tbaFlowBodySchema) {}
class CredentialFieldsFlowBodyDto extends createZodDto(credentialFieldsFlowBodySchema) {}
class BillFlowBodyDto extends createZodDto(billFlowBodySchema) {}
class SignatureFlowBodyDto extends createZodDto(signatureFlowBodySchema) {}

/** Query values as plain strings (a provider may repeat a key; the first one counts). */
function flatQuery(query: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries((query as Record<string, unknown>) ?? {})) {
    const first = Array.isArray(value) ? value[0] : value;
    if (typeof first === 'string') out[key] = first;
  }
  return out;
}

/**
 * Our error codes as `@nangohq/frontend` names them in a WebSocket `error` frame (Nango's `error_type`s);
 * a code Nango has no name for goes as it is.
 */
export function sdkErrorType(code: string): string {
  switch (code) {
    case 'unknown_provider_config':
      return 'unknown_config_key';
    case 'unknown_provider_template':
      return 'provider_config_err';
    case 'invalid_auth_mode':
      return 'auth_mode_err';
    case 'invalid_query_params':
    case 'invalid_connection':
      return 'url_param_err';
    case 'server_error':
      return 'unknown_err';
    default:
      return code;
  }
}

/**
 * The routes `@nangohq/frontend` and Switchboard's connect page call with a connect session token:
 * redirect flows start at `/oauth/connect/{key}` and come back to `/oauth/callback`; form flows post
 * credentials in the body (never in the URL) and answer `{ connectionId, providerConfigKey }`.
 */
@Controller()
export class AuthFlowsController {
  constructor(
    private readonly nats: NatsRequester,
    @Inject(GATEWAY_ENV) private readonly env: GatewayEnv,
    private readonly sockets: OAuthSockets,
  ) {}

  /** Nango's popup route: 302 to the provider. Failures render the result page so a popup can report them. */
  @Get('oauth/connect/:providerConfigKey')
  @RequireSessionQuery()
  async connect(
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @Param() params: unknown,
    @Query() query: unknown,
  ) {
    let providerConfigKey: string | null = null;
    // Set once this flow owns the opener's @nangohq/frontend socket: its outcome goes there too.
    let socket: { wsClientId: string; sessionId: number } | undefined;
    try {
      providerConfigKey = parseParams(keyParams, params).providerConfigKey;
      const credentials = (query as { credentials?: Record<string, unknown> } | undefined)?.credentials;
      if (credentials && typeof credentials === 'object' && 'oauth_client_secret_override' in credentials) {
        throw new SwitchboardError(
          'invalid_query_params',
          'A client secret must not travel in a URL: send it in the body of POST /oauth/connect/{key}',
          [
            {
              code: 'custom',
              message: 'not accepted in the query',
              path: ['credentials', 'oauth_client_secret_override'],
            },
          ],
        );
      }
      const parsed = parseQuery(oauthConnectQuerySchema, query);
      if (parsed.ws_client_id) {
        const { sessionId } = sessionOf(request);
        if (!(await this.sockets.claim(parsed.ws_client_id, sessionId))) {
          throw new SwitchboardError(
            'invalid_query_params',
            'ws_client_id names no open WebSocket of this authorization: start again from the app',
            [{ code: 'custom', message: 'unknown or taken', path: ['ws_client_id'] }],
          );
        }
        socket = { wsClientId: parsed.ws_client_id, sessionId };
      }
      // This browser goes to the provider itself: bind the state to it now.
      const browser = newBrowserNonce();
      const { url, state } = await this.start(request, providerConfigKey, {
        params: parsed.params ?? {},
        authorizationParams: parsed.authorization_params ?? {},
        userScope: parsed.user_scope,
        clientOverride: { clientId: parsed.credentials?.oauth_client_id_override },
        browserBinding: browser.binding,
        ...(socket ? { wsClientId: socket.wsClientId } : {}),
      });
      return this.redirectBound(reply, url, state, browser.nonce);
    } catch (error) {
      if (!(error instanceof SwitchboardError)) throw error;
      // The page is all a popup shows: name the fields too, not only the summary.
      const details = error.errors?.length ? `: ${error.errors.map((e) => e.message).join('; ')}` : '';
      const message = `${error.message}${details}`;
      if (socket) {
        this.sockets.publish(socket.wsClientId, socket.sessionId, {
          message_type: 'error',
          provider_config_key: providerConfigKey,
          connection_id: null,
          error_type: sdkErrorType(error.code),
          error_desc: message,
        });
      }
      return this.sendPage(
        reply,
        { ok: false, providerConfigKey, connectionId: null, errorType: error.code, message },
        statusForCode(error.code),
      );
    }
  }

  /**
   * The same start for pages that collect a client secret from the end user: it comes in the body, and the
   * provider URL goes back as JSON for the page to open.
   */
  @Post('oauth/connect/:providerConfigKey')
  @HttpCode(200)
  @RequireSessionQuery()
  async connectFromPage(
    @Req() request: FastifyRequest,
    @Body() parsed: OAuthConnectBodyDto,
    @Query() _query: TokenOnlyQueryDto,
    @Param() { providerConfigKey }: KeyParamsDto,
  ) {
    const { state } = await this.start(request, providerConfigKey, {
      params: parsed.params ?? {},
      authorizationParams: parsed.authorization_params ?? {},
      userScope: parsed.user_scope,
      clientOverride: {
        clientId: parsed.credentials?.oauth_client_id_override,
        clientSecret: parsed.credentials?.oauth_client_secret_override,
      },
    });
    // A fetch response cannot reliably set a cookie in the browser that will visit the provider (the page
    // may be on another site): the page opens this launch URL instead, which binds the flow and redirects.
    return { url: `${this.env.SWITCHBOARD_SERVER_URL.replace(/\/$/, '')}/oauth/launch/${state}` };
  }

  /** Where the connect page sends its popup: binds the flow to this browser, then 302 to the provider. */
  @Get('oauth/launch/:state')
  @Public()
  async launch(@Res() reply: FastifyReply, @Param() params: unknown) {
    try {
      const { state } = parseParams(launchParams, params);
      const browser = newBrowserNonce();
      const { url } = await this.nats.call(CONNECT_FLOW_REQUESTS.bind, {
        state,
        browserBinding: browser.binding,
      });
      return this.redirectBound(reply, url, state, browser.nonce);
    } catch (error) {
      if (!(error instanceof SwitchboardError)) throw error;
      return this.sendPage(
        reply,
        {
          ok: false,
          providerConfigKey: null,
          connectionId: null,
          errorType: error.code,
          message: error.message,
        },
        statusForCode(error.code),
      );
    }
  }

  @Get('oauth/callback')
  @Public()
  async callback(@Req() request: FastifyRequest, @Res() reply: FastifyReply, @Query() query: unknown) {
    return this.finish(request, reply, flatQuery(query));
  }

  /** A GitHub App's "Setup URL": the installation comes back here with the state we sent. */
  @Get('app-auth/connect')
  @Public()
  async appCallback(@Req() request: FastifyRequest, @Res() reply: FastifyReply, @Query() query: unknown) {
    return this.finish(request, reply, flatQuery(query));
  }

  @Post('api-auth/api-key/:providerConfigKey')
  @HttpCode(200)
  @RequireSessionQuery()
  async apiKey(
    @Req() request: FastifyRequest,
    @Body() body: ApiKeyFlowBodyDto,
    @Query() query: FlowSubmitQueryDto,
    @Param() { providerConfigKey }: KeyParamsDto,
  ) {
    return this.submit(request, 'API_KEY', providerConfigKey, query, body);
  }

  @Post('api-auth/basic/:providerConfigKey')
  @HttpCode(200)
  @RequireSessionQuery()
  async basic(
    @Req() request: FastifyRequest,
    @Body() body: BasicFlowBodyDto,
    @Query() query: FlowSubmitQueryDto,
    @Param() { providerConfigKey }: KeyParamsDto,
  ) {
    return this.submit(request, 'BASIC', providerConfigKey, query, body);
  }

  @Post('oauth2/auth/:providerConfigKey')
  @HttpCode(200)
  @RequireSessionQuery()
  async clientCredentials(
    @Req() request: FastifyRequest,
    @Body() body: ClientCredentialsFlowBodyDto,
    @Query() query: FlowSubmitQueryDto,
    @Param() { providerConfigKey }: KeyParamsDto,
  ) {
    return this.submit(request, 'OAUTH2_CC', providerConfigKey, query, body);
  }

  @Post('auth/tba/:providerConfigKey')
  @HttpCode(200)
  @RequireSessionQuery()
  async tba(
    @Req() request: FastifyRequest,
    @Body() body: TbaFlowBodyDto,
    @Query() query: FlowSubmitQueryDto,
    @Param() { providerConfigKey }: KeyParamsDto,
  ) {
    return this.submit(request, 'TBA', providerConfigKey, query, body);
  }

  @Post('auth/jwt/:providerConfigKey')
  @HttpCode(200)
  @RequireSessionQuery()
  async jwt(
    @Req() request: FastifyRequest,
    @Body() body: CredentialFieldsFlowBodyDto,
    @Query() query: FlowSubmitQueryDto,
    @Param() { providerConfigKey }: KeyParamsDto,
  ) {
    return this.submit(request, 'JWT', providerConfigKey, query, body);
  }

  @Post('auth/two-step/:providerConfigKey')
  @HttpCode(200)
  @RequireSessionQuery()
  async twoStep(
    @Req() request: FastifyRequest,
    @Body() body: CredentialFieldsFlowBodyDto,
    @Query() query: FlowSubmitQueryDto,
    @Param() { providerConfigKey }: KeyParamsDto,
  ) {
    return this.submit(request, 'TWO_STEP', providerConfigKey, query, body);
  }

  @Post('auth/bill/:providerConfigKey')
  @HttpCode(200)
  @RequireSessionQuery()
  async bill(
    @Req() request: FastifyRequest,
    @Body() body: BillFlowBodyDto,
    @Query() query: FlowSubmitQueryDto,
    @Param() { providerConfigKey }: KeyParamsDto,
  ) {
    return this.submit(request, 'BILL', providerConfigKey, query, body);
  }

  @Post('auth/signature/:providerConfigKey')
  @HttpCode(200)
  @RequireSessionQuery()
  async signature(
    @Req() request: FastifyRequest,
    @Body() body: SignatureFlowBodyDto,
    @Query() query: FlowSubmitQueryDto,
    @Param() { providerConfigKey }: KeyParamsDto,
  ) {
    return this.submit(request, 'SIGNATURE', providerConfigKey, query, body);
  }

  private async start(
    request: FastifyRequest,
    providerConfigKey: string,
    input: {
      params: Record<string, string>;
      authorizationParams: Record<string, string>;
      userScope: string | undefined;
      clientOverride: { clientId?: string | undefined; clientSecret?: string | undefined };
      browserBinding?: string;
      wsClientId?: string;
    },
  ): Promise<StartedFlow> {
    const { caller, sessionId } = sessionOf(request);
    return this.nats.call(CONNECT_FLOW_REQUESTS.start, {
      caller,
      sessionId,
      providerConfigKey,
      params: input.params,
      authorizationParams: input.authorizationParams,
      ...(input.userScope ? { userScope: input.userScope } : {}),
      ...(input.browserBinding ? { browserBinding: input.browserBinding } : {}),
      ...(input.wsClientId ? { wsClientId: input.wsClientId } : {}),
      clientOverride: input.clientOverride,
    });
  }

  private get secureCookies(): boolean {
    return this.env.SWITCHBOARD_SERVER_URL.startsWith('https:');
  }

  private redirectBound(reply: FastifyReply, url: string, state: string, nonce: string) {
    return reply
      .status(302)
      .header('set-cookie', flowCookies(state, nonce, this.secureCookies))
      .header('location', url)
      .header('cache-control', 'no-store')
      .send();
  }

  /**
   * The callback: the nonce this browser holds for the state goes along. A GitHub App install coming back
   * is sent on to the app's user authorization with its binding kept; otherwise the binding is spent.
   */
  private async finish(request: FastifyRequest, reply: FastifyReply, query: Record<string, string>) {
    const state = query['state'];
    const browserNonce = isFlowState(state) ? readFlowNonce(request.headers.cookie, state) : undefined;
    const answer = await this.nats.call(CONNECT_FLOW_REQUESTS.callback, {
      query,
      ...(browserNonce ? { browserNonce } : {}),
    });
    if ('continueTo' in answer) {
      return reply
        .status(302)
        .header('location', answer.continueTo)
        .header('cache-control', 'no-store')
        .header('referrer-policy', 'no-referrer')
        .send();
    }
    const outcome = answer;
    if (isFlowState(state) && browserNonce)
      reply.header('set-cookie', clearedFlowCookies(state, this.secureCookies));
    if (outcome.notify) {
      this.sockets.publish(
        outcome.notify.wsClientId,
        outcome.notify.sessionId,
        outcome.ok
          ? {
              message_type: 'success',
              provider_config_key: outcome.providerConfigKey,
              connection_id: outcome.connectionId,
              is_pending: outcome.isPending,
            }
          : {
              message_type: 'error',
              provider_config_key: outcome.providerConfigKey,
              connection_id: outcome.connectionId,
              error_type: outcome.errorType,
              error_desc: outcome.message,
            },
      );
    }
    return this.sendPage(reply, outcome);
  }

  private async submit(
    request: FastifyRequest,
    mode: SubmitFlowMode,
    providerConfigKey: string,
    parsedQuery: FlowSubmitQueryDto,
    parsedBody: unknown,
  ): Promise<FlowResult> {
    if (parsedQuery.connection_id !== undefined) {
      throw new SwitchboardError(
        'invalid_query_params',
        'connection_id is forbidden when using session token',
        [
          {
            code: 'custom',
            message: 'connection_id is forbidden when using session token',
            path: ['connection_id'],
          },
        ],
      );
    }
    const { caller, sessionId } = sessionOf(request);
    // Each route's DTO parsed the body of its own mode, a pairing the compiler cannot follow through
    // `submit` (`call` checks the pair against the union before sending).
    return this.nats.call(CONNECT_FLOW_REQUESTS.submit, {
      caller,
      sessionId,
      providerConfigKey,
      params: parsedQuery.params ?? {},
      mode,
      body: parsedBody,
    } as NatsRequestOf<typeof CONNECT_FLOW_REQUESTS.submit>);
  }

  private sendPage(reply: FastifyReply, outcome: CallbackOutcome, status?: number) {
    const page = renderCallbackPage(
      outcome,
      this.env.SWITCHBOARD_CONNECT_URL,
      this.env.SWITCHBOARD_CONNECT_ALLOWED_ORIGINS,
    );
    return reply
      .status(status ?? page.status)
      .header('content-security-policy', page.csp)
      .header('cache-control', 'no-store')
      .header('referrer-policy', 'no-referrer')
      .type('text/html; charset=utf-8')
      .send(page.html);
  }
}
