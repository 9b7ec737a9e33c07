import { createHash } from 'node:crypto';
import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Injectable,
  Inject,
  Param,
  Patch,
  Post,
  Query,
  Req,
  Res,
  UseGuards,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import {
  CONSOLE_ROLE_SCOPES,
  consoleAuditQuerySchema,
  consoleSignInBodySchema,
  consoleUserIdParamsSchema,
  createConsoleUserBodySchema,
  SwitchboardError,
  updateConsoleUserBodySchema,
  type ConsoleActor,
  type ConsoleAuditPage,
  type ConsoleConfig,
  type ConsoleMe,
  type ConsoleUser,
  type VerifiedConsoleSession,
  CONSOLE_OIDC_REQUESTS,
  CONSOLE_REQUESTS,
} from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AccountRateLimiter, type RateVerdict } from '../access/rate-limiter';
import { Public, RequireConsoleSession } from '../access/route-access';
import { GATEWAY_ENV, type GatewayEnv } from '../config/env';
import { errorBody, sendError } from '../http/error-reply';
import { createZodDto } from 'nestjs-zod';
import {
  clearedOidcCookie,
  clearedSessionCookie,
  consoleTokenHash,
  csrfTokenOf,
  newConsoleToken,
  newOidcBinding,
  oidcCookie,
  readConsoleCookie,
  readOidcCookie,
  sameSecret,
  sessionCookie,
} from './console-auth.session';

class SignInBodyDto extends createZodDto(consoleSignInBodySchema) {}
class CreateConsoleUserBodyDto extends createZodDto(createConsoleUserBodySchema) {}
class UpdateConsoleUserBodyDto extends createZodDto(updateConsoleUserBodySchema) {}
class ConsoleUserIdParamsDto extends createZodDto(consoleUserIdParamsSchema) {}
class ConsoleAuditQueryDto extends createZodDto(consoleAuditQuerySchema) {}
const AUDIT_REFUSAL = 'Only an admin reads the audit log';

function sessionOf(request: FastifyRequest): VerifiedConsoleSession {
  const session = request.consoleSession;
  if (!session) throw new SwitchboardError('console_session_required', 'Sign in to the console first');
  return session;
}

function adminOf(request: FastifyRequest, refusal = 'Only an admin manages console users'): ConsoleActor {
  const session = sessionOf(request);
  if (session.user.role !== 'admin') {
    throw new SwitchboardError('forbidden', refusal);
  }
  return { accountId: session.accountId, userId: session.user.id, role: session.user.role };
}

/** Admins only, checked before the request's inputs are parsed (a refusal tells nothing of them). */
class AdminOnly implements CanActivate {
  constructor(private readonly refusal?: string) {}

  canActivate(context: ExecutionContext): boolean {
    adminOf(context.switchToHttp().getRequest<FastifyRequest>(), this.refusal);
    return true;
  }
}

/** No login CSRF: another site cannot sign this browser in to an account of its choosing. */
@Injectable()
class SignInFromConsole implements CanActivate {
  private readonly ownOrigin: string;

  constructor(@Inject(GATEWAY_ENV) env: GatewayEnv) {
    this.ownOrigin = new URL(env.SWITCHBOARD_SERVER_URL).origin;
  }

  canActivate(context: ExecutionContext): boolean {
    const origin = context.switchToHttp().getRequest<FastifyRequest>().headers.origin;
    if (origin !== undefined && origin !== this.ownOrigin) {
      throw new SwitchboardError('csrf_token_invalid', 'Sign in from the console itself');
    }
    return true;
  }
}

function describe(session: VerifiedConsoleSession, token: string): ConsoleMe {
  return {
    user: session.user,
    csrf_token: csrfTokenOf(token),
    environments: session.environments.map((e) => ({ name: e.name })),
    scopes: [...CONSOLE_ROLE_SCOPES[session.user.role]],
  };
}

/**
 * `/console/api/*`: sign-in, the signed-in user, sign-out and (admins only) console users. The access hook
 * has already checked the session cookie, and for writes the CSRF header and the origin, on every route
 * here but sign-in, which checks the origin itself and throttles attempts per client address and per email.
 */
@Controller('console/api')
export class ConsoleAuthController {
  private readonly ownOrigin: string;

  constructor(
    private readonly nats: NatsRequester,
    private readonly limiter: AccountRateLimiter,
    @Inject(GATEWAY_ENV) private readonly env: GatewayEnv,
  ) {
    this.ownOrigin = new URL(env.SWITCHBOARD_SERVER_URL).origin;
  }

  /** What the sign-in page offers before anyone signs in (the OIDC button); nothing secret. */
  @Get('config')
  @Public()
  async config(@Res({ passthrough: true }) reply: FastifyReply): Promise<ConsoleConfig> {
    reply.header('Cache-Control', 'no-store');
    return this.nats.call(CONSOLE_OIDC_REQUESTS.config, {});
  }

  @Post('sign-in')
  @Public()
  @UseGuards(SignInFromConsole)
  async signIn(
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @Body() { email, password }: SignInBodyDto,
  ): Promise<FastifyReply> {
    // Every attempt counts against the address; only failures count against the email, so its owner
    // is not locked out by signing in often, while guessing one account's password is.
    const emailKey = `console-sign-in-email:${createHash('sha256').update(email.trim().toLowerCase()).digest('hex')}`;
    const emailPoints = this.env.SWITCHBOARD_CONSOLE_SIGN_IN_PER_EMAIL_PER_MIN;
    const byAddress = await this.limiter.consume(
      `console-sign-in-ip:${request.ip}`,
      this.env.SWITCHBOARD_CONSOLE_SIGN_IN_PER_IP_PER_MIN,
    );
    if (byAddress.limited) return this.tooMany(reply, byAddress);
    const byEmail = await this.limiter.exhausted(emailKey, emailPoints);
    if (byEmail) return this.tooMany(reply, byEmail);

    // Session fixation: whatever cookie came along is never reused; its session, if any, ends here.
    const previous = readConsoleCookie(request.headers.cookie);
    if (previous) {
      await this.nats.call(CONSOLE_REQUESTS.signOut, { tokenHash: consoleTokenHash(previous) });
    }
    const { token, tokenHash } = newConsoleToken();
    let session: VerifiedConsoleSession;
    try {
      session = await this.nats.call(CONSOLE_REQUESTS.signIn, {
        email,
        password,
        tokenHash,
      });
    } catch (error) {
      if (error instanceof SwitchboardError && error.code === 'invalid_credentials') {
        await this.limiter.consume(emailKey, emailPoints);
        // 401 rather than the table's 400 for this code (a connection's credentials): these are a person's.
        return reply
          .status(401)
          .type('application/json')
          .send(errorBody('invalid_credentials', 'The email or the password is wrong'));
      }
      throw error;
    }
    return reply
      .status(200)
      .header('Set-Cookie', sessionCookie(token, Math.floor((session.expiresAt - Date.now()) / 1000)))
      .header('Cache-Control', 'no-store')
      .type('application/json')
      .send(describe(session, token));
  }

  /** Sign-in with the installation's OIDC provider: to the provider, with this browser bound to the attempt. */
  @Get('oidc/start')
  @Public()
  async oidcStart(@Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<FastifyReply> {
    const byAddress = await this.limiter.consume(
      `console-sign-in-ip:${request.ip}`,
      this.env.SWITCHBOARD_CONSOLE_SIGN_IN_PER_IP_PER_MIN,
    );
    if (byAddress.limited) return this.tooMany(reply, byAddress);
    const binding = newOidcBinding();
    const { url } = await this.nats.call(CONSOLE_OIDC_REQUESTS.start, {
      redirectUri: `${this.ownOrigin}/console/api/oidc/callback`,
      state: binding.state,
      nonce: binding.nonce,
      codeChallenge: binding.codeChallenge,
    });
    return reply
      .status(302)
      .header('Set-Cookie', oidcCookie(binding))
      .header('Cache-Control', 'no-store')
      .header('Location', url)
      .send();
  }

  /**
   * The provider's answer: only in the browser that started the attempt (its cookie's state), then
   * auth-connect redeems the code and checks the ID token; a new console session, as with a password.
   */
  @Get('oidc/callback')
  @Public()
  async oidcCallback(
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @Query() query: Record<string, unknown>,
  ): Promise<FastifyReply> {
    const binding = readOidcCookie(request.headers.cookie);
    const state = typeof query.state === 'string' ? query.state : '';
    if (!binding || !sameSecret(binding.state, state)) {
      reply.header('Set-Cookie', clearedOidcCookie());
      return sendError(
        reply,
        'invalid_query_params',
        'This sign-in was not started in this browser, or it took too long; start again',
      );
    }
    const previous = readConsoleCookie(request.headers.cookie);
    if (previous) {
      await this.nats.call(CONSOLE_REQUESTS.signOut, { tokenHash: consoleTokenHash(previous) });
    }
    const { token, tokenHash } = newConsoleToken();
    let session: VerifiedConsoleSession;
    try {
      session = await this.nats.call(CONSOLE_OIDC_REQUESTS.finish, {
        callbackUrl: `${this.ownOrigin}${request.url}`,
        ...binding,
        tokenHash,
      });
    } catch (error) {
      if (error instanceof SwitchboardError && error.code === 'invalid_credentials') {
        return reply
          .status(401)
          .header('Set-Cookie', clearedOidcCookie())
          .type('application/json')
          .send(errorBody('invalid_credentials', error.message));
      }
      throw error;
    }
    return reply
      .status(302)
      .header('Set-Cookie', [
        sessionCookie(token, Math.floor((session.expiresAt - Date.now()) / 1000)),
        clearedOidcCookie(),
      ])
      .header('Cache-Control', 'no-store')
      .header('Location', '/console')
      .send();
  }

  @Get('me')
  @RequireConsoleSession()
  me(@Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): ConsoleMe {
    reply.header('Cache-Control', 'no-store');
    return describe(sessionOf(request), readConsoleCookie(request.headers.cookie)!);
  }

  @Post('sign-out')
  @RequireConsoleSession()
  @HttpCode(204)
  async signOut(
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<void> {
    const token = readConsoleCookie(request.headers.cookie)!;
    await this.nats.call(CONSOLE_REQUESTS.signOut, { tokenHash: consoleTokenHash(token) });
    reply.header('Set-Cookie', clearedSessionCookie());
  }

  @Get('users')
  @RequireConsoleSession()
  async listUsers(@Req() request: FastifyRequest): Promise<{ users: ConsoleUser[] }> {
    return this.nats.call(CONSOLE_REQUESTS.listUsers, { actor: adminOf(request) });
  }

  @Post('users')
  @RequireConsoleSession()
  @UseGuards(new AdminOnly())
  @HttpCode(201)
  async createUser(
    @Req() request: FastifyRequest,
    @Body() body: CreateConsoleUserBodyDto,
  ): Promise<ConsoleUser> {
    return this.nats.call(CONSOLE_REQUESTS.createUser, { actor: adminOf(request), body });
  }

  @Patch('users/:id')
  @RequireConsoleSession()
  @UseGuards(new AdminOnly())
  async updateUser(
    @Req() request: FastifyRequest,
    @Body() body: UpdateConsoleUserBodyDto,
    @Param() { id }: ConsoleUserIdParamsDto,
  ): Promise<ConsoleUser> {
    return this.nats.call(CONSOLE_REQUESTS.updateUser, { actor: adminOf(request), id, body });
  }

  @Delete('users/:id')
  @RequireConsoleSession()
  @UseGuards(new AdminOnly())
  async deleteUser(
    @Req() request: FastifyRequest,
    @Param() { id }: ConsoleUserIdParamsDto,
  ): Promise<ConsoleUser> {
    return this.nats.call(CONSOLE_REQUESTS.deleteUser, { actor: adminOf(request), id });
  }

  /** The account's audit log: credentials reads, sign-ins, console users' changes; admins only. */
  @Get('audit')
  @RequireConsoleSession()
  @UseGuards(new AdminOnly(AUDIT_REFUSAL))
  async listAudit(
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
    @Query() query: ConsoleAuditQueryDto,
  ): Promise<ConsoleAuditPage> {
    reply.header('Cache-Control', 'no-store');
    return this.nats.call(CONSOLE_REQUESTS.listAudit, { actor: adminOf(request, AUDIT_REFUSAL), query });
  }

  private tooMany(reply: FastifyReply, verdict: RateVerdict): FastifyReply {
    reply.header('Retry-After', verdict.retryAfter);
    return sendError(
      reply,
      'too_many_request',
      `Too many sign-in attempts; retry in ${verdict.retryAfter} s`,
    );
  }
}
