import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import {
  CONSOLE_COOKIE,
  SwitchboardError,
  type VerifiedConsoleSession,
  CONSOLE_REQUESTS,
} from '@switchboard/contracts';
import { NatsRequester } from '@switchboard/messaging';

/** The cookie value: 32 random bytes, base64url (43 characters). */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

export interface ConsoleSessionToken {
  token: string;
  /** What auth-connect stores and looks sessions up by. */
  tokenHash: string;
}

export function newConsoleToken(): ConsoleSessionToken {
  const token = randomBytes(32).toString('base64url');
  return { token, tokenHash: consoleTokenHash(token) };
}

export function consoleTokenHash(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** The console cookie's value from a `Cookie` header, when it has the token's shape. */
export function readConsoleCookie(cookieHeader: string | undefined): string | undefined {
  if (!cookieHeader) return undefined;
  for (const part of cookieHeader.split(';')) {
    const index = part.indexOf('=');
    if (index === -1 || part.slice(0, index).trim() !== CONSOLE_COOKIE) continue;
    const value = part.slice(index + 1).trim();
    return TOKEN.test(value) ? value : undefined;
  }
  return undefined;
}

/** Whether the request carries a console cookie at all (well formed or not). */
export function hasConsoleCookie(cookieHeader: string | undefined): boolean {
  return !!cookieHeader && cookieHeader.split(';').some((p) => p.split('=')[0]?.trim() === CONSOLE_COOKIE);
}

/**
 * The session's CSRF token: an HMAC of the cookie value, so every gateway replica derives the same one
 * without storing it, it stays the same for the session's life, and it does not reveal the cookie. The
 * SPA reads it from the sign-in (or `/me`) answer and sends it as `X-CSRF-Token` on every write, which a
 * page of another origin cannot do.
 */
export function csrfTokenOf(token: string): string {
  return createHmac('sha256', token).update('switchboard-console-csrf').digest('base64url');
}

export function csrfTokenMatches(token: string, presented: string | string[] | undefined): boolean {
  if (typeof presented !== 'string') return false;
  const expected = Buffer.from(csrfTokenOf(token));
  const given = Buffer.from(presented);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** `Set-Cookie` for a new session, living as long as the session may. */
export function sessionCookie(token: string, maxAgeSeconds: number): string {
  return `${CONSOLE_COOKIE}=${token}; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=${Math.max(0, maxAgeSeconds)}`;
}

export function clearedSessionCookie(): string {
  return `${CONSOLE_COOKIE}=; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=0`;
}

/**
 * Resolves a console cookie to its session by asking auth-connect with the value's hash. Not cached: a
 * sign-out, a role change or a deleted user must end the session on every replica at once, and console
 * traffic is one person's clicks.
 */
@Injectable()
export class ConsoleSessionResolver {
  constructor(private readonly nats: NatsRequester) {}

  async resolve(token: string): Promise<VerifiedConsoleSession | null> {
    try {
      return await this.nats.call(
        CONSOLE_REQUESTS.verify,
        { tokenHash: consoleTokenHash(token) },
        { timeoutMs: 5000 },
      );
    } catch (error) {
      if (error instanceof SwitchboardError && error.code === 'console_session_required') return null;
      throw error;
    }
  }
}

/** The OIDC sign-in's browser binding: state, nonce and PKCE verifier, for the callback path only. */
const OIDC_COOKIE = 'switchboard_console_oidc';
const OIDC_PATH = '/console/api/oidc';
const OIDC_MAX_AGE_S = 600;
const RANDOM = /^[A-Za-z0-9_-]{43}$/;

export interface OidcBinding {
  state: string;
  nonce: string;
  codeVerifier: string;
}

export function newOidcBinding(): OidcBinding & { codeChallenge: string } {
  const codeVerifier = randomBytes(32).toString('base64url');
  return {
    state: randomBytes(32).toString('base64url'),
    nonce: randomBytes(32).toString('base64url'),
    codeVerifier,
    codeChallenge: createHash('sha256').update(codeVerifier).digest('base64url'),
  };
}

/**
 * SameSite=Lax: the provider sends the browser back with a top-level GET from its own site, which a
 * Strict cookie would not come along with. Only the browser that started the sign-in holds it, so a
 * callback URL handed to another browser (login CSRF) is refused.
 */
export function oidcCookie(binding: OidcBinding): string {
  const value = `${binding.state}.${binding.nonce}.${binding.codeVerifier}`;
  return `${OIDC_COOKIE}=${value}; HttpOnly; Secure; SameSite=Lax; Path=${OIDC_PATH}; Max-Age=${OIDC_MAX_AGE_S}`;
}

export function clearedOidcCookie(): string {
  return `${OIDC_COOKIE}=; HttpOnly; Secure; SameSite=Lax; Path=${OIDC_PATH}; Max-Age=0`;
}

export function readOidcCookie(cookieHeader: string | undefined): OidcBinding | undefined {
  for (const part of (cookieHeader ?? '').split(';')) {
    const index = part.indexOf('=');
    if (index === -1 || part.slice(0, index).trim() !== OIDC_COOKIE) continue;
    const [state, nonce, codeVerifier, ...rest] = part
      .slice(index + 1)
      .trim()
      .split('.');
    if (rest.length > 0 || ![state, nonce, codeVerifier].every((v) => v !== undefined && RANDOM.test(v))) {
      return undefined;
    }
    return { state: state!, nonce: nonce!, codeVerifier: codeVerifier! };
  }
  return undefined;
}

export function sameSecret(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
