import { createHash, randomBytes } from 'node:crypto';

/**
 * The browser half of an OAuth `state`: a random nonce in an HttpOnly, SameSite=Lax cookie, set on the
 * response that sends this browser to the provider and required at the callback. A provider URL (and so
 * its state) handed to another browser comes back without the cookie and is refused: no login CSRF, no
 * connection fixation. Only the nonce's SHA-256 leaves the gateway; the cookie is scoped to the two
 * callback paths and named after the state, so flows in several popups do not overwrite each other.
 */

const PREFIX = 'sb_oauth_';
const CALLBACK_PATHS = ['/oauth/callback', '/app-auth/connect'] as const;
/** The state lives 15 minutes in auth-connect; the cookie no longer. */
const MAX_AGE_SECONDS = 15 * 60;
const STATE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface BrowserNonce {
  nonce: string;
  /** What auth-connect stores and compares: SHA-256 of the nonce, base64url. */
  binding: string;
}

export function newBrowserNonce(): BrowserNonce {
  const nonce = randomBytes(32).toString('base64url');
  return { nonce, binding: createHash('sha256').update(nonce).digest('base64url') };
}

function attributes(path: string, secure: boolean, maxAge: number): string {
  return `Path=${path}; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}

/** `Set-Cookie` values binding `state` to this browser (one per callback path). */
export function flowCookies(state: string, nonce: string, secure: boolean): string[] {
  return CALLBACK_PATHS.map(
    (path) => `${PREFIX}${state}=${nonce}; ${attributes(path, secure, MAX_AGE_SECONDS)}`,
  );
}

/** `Set-Cookie` values that remove the binding once the callback used it. */
export function clearedFlowCookies(state: string, secure: boolean): string[] {
  return CALLBACK_PATHS.map((path) => `${PREFIX}${state}=; ${attributes(path, secure, 0)}`);
}

export function isFlowState(state: unknown): state is string {
  return typeof state === 'string' && STATE.test(state);
}

/** The nonce this browser holds for `state`, from a `Cookie` header. */
export function readFlowNonce(cookieHeader: string | undefined, state: string): string | undefined {
  const name = `${PREFIX}${state}`;
  for (const part of (cookieHeader ?? '').split(';')) {
    const index = part.indexOf('=');
    if (index === -1) continue;
    if (part.slice(0, index).trim() === name) return part.slice(index + 1).trim() || undefined;
  }
  return undefined;
}
