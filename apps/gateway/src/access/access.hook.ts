import { Inject, Injectable } from '@nestjs/common';
import {
  CONNECT_SESSION_TOKEN_PATTERN,
  CONNECT_SESSION_TOKEN_PREFIX,
  CONSOLE_ROLE_SCOPES,
  type Caller,
  type Scope,
  type VerifiedConnectSession,
  type VerifiedConsoleSession,
  type VerifiedKey,
} from '@switchboard/contracts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GATEWAY_ENV, type GatewayEnv } from '../config/env';
import { SessionTokenResolver } from '../connect/session-token.resolver';
import { READINESS_VIEWER } from '@switchboard/service-kit';
import {
  ConsoleSessionResolver,
  csrfTokenMatches,
  hasConsoleCookie,
  readConsoleCookie,
} from '../console/console-auth.session';
import { errorBody, sendError } from '../http/error-reply';
import { ApiKeyResolver } from './api-key.resolver';
import { AccountRateLimiter, type RateVerdict } from './rate-limiter';
import type { RouteAccess } from './route-access';

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller | null;
    scopes: Scope[];
    /** Set when a connect session token authenticated the request (then `scopes` is empty). */
    connectSession: VerifiedConnectSession | null;
    /** Set when a console session cookie authenticated the request (then `scopes` are its role's). */
    consoleSession: VerifiedConsoleSession | null;
  }
}

/** A secret key's format. */
export const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
/** `Authorization: Bearer <token>`; the token is the first group. */
export const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * Runs on every request before its body is parsed: authenticate the secret key, count the request
 * against the account's window, then check the route's scope. Anything missing fails closed.
 * Requests that fail authentication are counted per client address, so key guessing is throttled too.
 */
@Injectable()
export class AccessHook {
  constructor(
    private readonly keys: ApiKeyResolver,
    private readonly limiter: AccountRateLimiter,
    private readonly sessions: SessionTokenResolver,
    private readonly consoleSessions: ConsoleSessionResolver,
    @Inject(GATEWAY_ENV) env: GatewayEnv,
  ) {
    this.sessionPoints = env.SWITCHBOARD_SESSION_RATE_LIMIT_PER_MIN;
    this.ownOrigin = new URL(env.SWITCHBOARD_SERVER_URL).origin;
  }

  private readonly sessionPoints: number;
  /** The console is served from the gateway's own origin; a cookie-authenticated write from another is refused. */
  private readonly ownOrigin: string;

  register(fastify: FastifyInstance): void {
    fastify.decorateRequest('caller', null);
    fastify.decorateRequest('scopes', null as unknown as Scope[]);
    fastify.decorateRequest('connectSession', null);
    fastify.decorateRequest('consoleSession', null);
    fastify.addHook('onRequest', (request, reply) => this.check(request, reply));
  }

  private async check(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    const access = (request.routeOptions.config as { access?: RouteAccess } | undefined)?.access;
    if (access && 'public' in access) {
      if (access.optionalKey) await this.recognise(request, reply);
      return undefined;
    }
    // A CORS preflight carries no credentials by design; the CORS handler answers it.
    if (request.method === 'OPTIONS' && request.headers['access-control-request-method']) return undefined;

    const session = access && 'session' in access ? access.session : undefined;
    if (session === 'query') {
      const token = (request.query as Record<string, unknown> | undefined)?.['connect_session_token'];
      return this.checkSession(request, reply, typeof token === 'string' ? token : '');
    }

    if (access && 'console' in access) return this.checkConsole(request, reply, undefined);
    const header = request.headers.authorization;
    // A browser signed in to the console sends its cookie and no Authorization header.
    if (header === undefined && hasConsoleCookie(request.headers.cookie)) {
      return this.checkConsole(request, reply, access && 'scope' in access ? access.scope : null);
    }
    if (header === undefined) {
      return this.refuse(
        request,
        reply,
        'missing_auth_header',
        'Authentication failed. The request is missing the Authorization header.',
      );
    }
    const match = BEARER.exec(header);
    if (!match?.[1]) {
      return this.refuse(
        request,
        reply,
        'malformed_auth_header',
        'Authentication failed. Expected "Authorization: Bearer <secret key>".',
      );
    }
    // A token with the session prefix is never tried as a secret key (as Nango does).
    const sessionOnly = session === true && !(access && 'scope' in access);
    if (session === true && (sessionOnly || match[1].startsWith(CONNECT_SESSION_TOKEN_PREFIX))) {
      return this.checkSession(request, reply, match[1]);
    }
    if (!UUID_V4.test(match[1])) {
      return this.refuse(
        request,
        reply,
        'invalid_secret_key_format',
        'Authentication failed. The secret key is not in the expected format.',
      );
    }
    const verified = await this.keys.resolve(match[1]);
    if (!verified)
      return this.refuse(
        request,
        reply,
        'unknown_account',
        'Authentication failed. The secret key is not valid.',
      );

    const verdict = await this.limiter.consume(`account:${verified.accountId}`);
    this.setRateHeaders(reply, verdict);
    if (verdict.limited) return this.tooMany(reply, verdict);

    // An unknown route is answered with 404 by the router once the caller is known.
    if (!request.is404) {
      if (!access || !('scope' in access))
        return sendError(reply, 'forbidden', 'This route is not available to API keys');
      if (!verified.scopes.includes(access.scope)) {
        return sendError(reply, 'forbidden', `Insufficient scope. Required: ${access.scope}`);
      }
    }
    request.caller = toCaller(verified);
    request.scopes = verified.scopes;
    return undefined;
  }

  /**
   * A console session cookie: the session (unknown, expired and signed out are one answer), then for a
   * write the CSRF header and the origin, then the session's own window, then, on an API route (`scope`
   * given), the environment the request names and the role's scopes. `scope` undefined: a `/console/api`
   * route (no environment); null: a route the console may not call.
   */
  private async checkConsole(
    request: FastifyRequest,
    reply: FastifyReply,
    scope: Scope | null | undefined,
  ): Promise<FastifyReply | undefined> {
    const token = readConsoleCookie(request.headers.cookie);
    const verified = token ? await this.consoleSessions.resolve(token) : null;
    if (!token || !verified) {
      return this.refuse(
        request,
        reply,
        'console_session_required',
        'Sign in to the console first: there is no console session, or it has ended',
      );
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      if (!this.sameOrigin(request) || !csrfTokenMatches(token, request.headers['x-csrf-token'])) {
        return sendError(
          reply,
          'csrf_token_invalid',
          'A console write needs the X-CSRF-Token of its session, from the console itself',
        );
      }
    }
    const verdict = await this.limiter.consume(`console:${verified.sessionId}`, this.sessionPoints);
    this.setRateHeaders(reply, verdict);
    if (verdict.limited) return this.tooMany(reply, verdict);
    request.consoleSession = verified;
    request.scopes = [];
    if (scope === undefined || request.is404) return undefined;
    if (scope === null)
      return sendError(reply, 'forbidden', 'This route is not available to console sessions');

    const name = request.headers['x-switchboard-environment'];
    if (typeof name !== 'string' || name === '') {
      return sendError(
        reply,
        'invalid_headers',
        'A console request names its environment in the X-Switchboard-Environment header',
      );
    }
    const environment = verified.environments.find((e) => e.name === name);
    if (!environment) {
      // 400 rather than the table's 404 for this code: the header, not the path, names nothing.
      return reply
        .status(400)
        .type('application/json')
        .send(errorBody('unknown_environment', `No environment named "${name}" in this account`));
    }
    const scopes = CONSOLE_ROLE_SCOPES[verified.user.role];
    if (!scopes.includes(scope)) {
      return sendError(reply, 'forbidden', `Insufficient scope. Required: ${scope}`);
    }
    request.caller = {
      accountId: verified.accountId,
      environmentId: environment.id,
      environmentUuid: environment.uuid,
      environmentName: environment.name,
    };
    request.scopes = [...scopes];
    return undefined;
  }

  /**
   * The browser's own word on where a request comes from: `Origin` (sent on every cross-origin request and
   * every non-GET one) must be the gateway's, and `Sec-Fetch-Site`, when sent, must say same-origin.
   */
  private sameOrigin(request: FastifyRequest): boolean {
    const origin = request.headers.origin;
    if (origin !== undefined && origin !== this.ownOrigin) return false;
    const site = request.headers['sec-fetch-site'];
    return site === undefined || site === 'same-origin' || site === 'none';
  }

  /**
   * An open route that shows more to a key holder (`GET /ready`): a valid secret key marks the request
   * (READINESS_VIEWER); anything else just leaves it anonymous. A key nobody issued counts against the
   * address's window like any failed authentication, so guessing costs the same here.
   */
  private async recognise(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const token = BEARER.exec(request.headers.authorization ?? '')?.[1];
    if (!token || !UUID_V4.test(token)) return;
    const verified = await this.keys.resolve(token).catch(() => null);
    if (verified) {
      (request as unknown as Record<string, unknown>)[READINESS_VIEWER] = true;
      return;
    }
    const verdict = await this.limiter.consume(`ip:${request.ip}`);
    this.setRateHeaders(reply, verdict);
  }

  /**
   * A connect session token: its format, then the session (unknown or expired is one answer), then the
   * session's own window. Never the account's: the token is in an untrusted browser, which could otherwise
   * spend the window the customer's backend lives on.
   */
  private async checkSession(
    request: FastifyRequest,
    reply: FastifyReply,
    token: string,
  ): Promise<FastifyReply | undefined> {
    if (!CONNECT_SESSION_TOKEN_PATTERN.test(token)) {
      const message =
        token === ''
          ? 'Authentication failed. The connect session token is missing.'
          : 'Authentication failed. The connect session token is not in the expected format.';
      return this.refuse(request, reply, 'invalid_connect_session_token_format', message);
    }
    const verified = await this.sessions.resolve(token);
    if (!verified) {
      return this.refuse(
        request,
        reply,
        'unknown_connect_session_token',
        'Authentication failed. The connect session token is unknown or has expired.',
      );
    }
    const verdict = await this.limiter.consume(`session:${verified.sessionId}`, this.sessionPoints);
    this.setRateHeaders(reply, verdict);
    if (verdict.limited) return this.tooMany(reply, verdict);
    request.caller = verified.caller;
    request.scopes = [];
    request.connectSession = verified;
    return undefined;
  }

  private async refuse(
    request: FastifyRequest,
    reply: FastifyReply,
    code:
      | 'missing_auth_header'
      | 'malformed_auth_header'
      | 'invalid_secret_key_format'
      | 'unknown_account'
      | 'invalid_connect_session_token_format'
      | 'unknown_connect_session_token'
      | 'console_session_required',
    message: string,
  ): Promise<FastifyReply> {
    const verdict = await this.limiter.consume(`ip:${request.ip}`);
    this.setRateHeaders(reply, verdict);
    if (verdict.limited) return this.tooMany(reply, verdict);
    return sendError(reply, code, message);
  }

  private setRateHeaders(reply: FastifyReply, verdict: RateVerdict): void {
    reply.header('X-RateLimit-Limit', verdict.limit);
    reply.header('X-RateLimit-Remaining', verdict.remaining);
    reply.header('X-RateLimit-Reset', verdict.resetAt);
  }

  private tooMany(reply: FastifyReply, verdict: RateVerdict): FastifyReply {
    reply.header('Retry-After', verdict.retryAfter);
    return sendError(reply, 'too_many_request', `Rate limit exceeded; retry in ${verdict.retryAfter} s`);
  }
}

export function toCaller(key: VerifiedKey): Caller {
  return {
    accountId: key.accountId,
    environmentId: key.environmentId,
    environmentUuid: key.environmentUuid,
    environmentName: key.environmentName,
    keyId: key.keyId,
  };
}
