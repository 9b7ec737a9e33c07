import { randomBytes } from 'node:crypto';
import {
  csrfTokenMatches,
  csrfTokenOf,
  newConsoleToken,
  newOidcBinding,
  oidcCookie,
  readConsoleCookie,
  readOidcCookie,
  sessionCookie,
} from './console-auth.session';

describe('console session cookie and CSRF token', () => {
  it('draws 32 random bytes and keeps only their hash apart', () => {
    const a = newConsoleToken();
    const b = newConsoleToken();
    expect(a.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(a.token, 'base64url')).toHaveLength(32);
    expect(a.token).not.toBe(b.token);
    expect(a.tokenHash).toMatch(/^[0-9a-f]{64}$/);
    expect(a.tokenHash).not.toContain(a.token);
  });

  it('reads the cookie among others, and nothing that does not have the token shape', () => {
    const { token } = newConsoleToken();
    expect(readConsoleCookie(`theme=dark; switchboard_console=${token}; other=1`)).toBe(token);
    expect(readConsoleCookie('switchboard_console=short')).toBeUndefined();
    expect(readConsoleCookie(`switchboard_console_oidc=${token}`)).toBeUndefined();
    expect(readConsoleCookie(undefined)).toBeUndefined();
  });

  it('sets the cookie HttpOnly, Secure, SameSite=Strict, on every path, never with a negative age', () => {
    expect(sessionCookie('t', 60)).toBe(
      'switchboard_console=t; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=60',
    );
    expect(sessionCookie('t', -5)).toMatch(/Max-Age=0$/);
  });

  it("derives one CSRF token per session that matches only that session's", () => {
    const one = newConsoleToken().token;
    const two = newConsoleToken().token;
    expect(csrfTokenOf(one)).toBe(csrfTokenOf(one));
    expect(csrfTokenOf(one)).not.toBe(csrfTokenOf(two));
    expect(csrfTokenOf(one)).not.toContain(one);
    expect(csrfTokenMatches(one, csrfTokenOf(one))).toBe(true);
    expect(csrfTokenMatches(one, csrfTokenOf(two))).toBe(false);
    expect(csrfTokenMatches(one, undefined)).toBe(false);
    expect(csrfTokenMatches(one, [csrfTokenOf(one), csrfTokenOf(one)])).toBe(false);
    expect(csrfTokenMatches(one, csrfTokenOf(one).slice(1))).toBe(false);
  });

  it('round-trips the OIDC binding through its cookie and refuses a tampered one', () => {
    const binding = newOidcBinding();
    expect(binding.codeChallenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const pair = oidcCookie(binding).split(';')[0]!;
    expect(readOidcCookie(`a=b; ${pair}`)).toEqual({
      state: binding.state,
      nonce: binding.nonce,
      codeVerifier: binding.codeVerifier,
    });
    expect(readOidcCookie(`${pair}.extra`)).toBeUndefined();
    expect(readOidcCookie(`switchboard_console_oidc=${randomBytes(8).toString('hex')}`)).toBeUndefined();
  });
});
