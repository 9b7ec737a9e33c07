import type { Credentials } from '@switchboard/contracts';
import { expiresAtOf } from '../credentials/credentials-cipher';

/** Auth modes whose credentials are re-issued by a call to the provider (auth-connect performs it). */
const REISSUED_MODES = new Set([
  'OAUTH2_CC',
  'APP',
  'CUSTOM',
  'JWT',
  'TWO_STEP',
  'BILL',
  'SIGNATURE',
  'AWS_SIGV4',
]);
const GITHUB_APP_MODES = new Set(['APP', 'CUSTOM']);

export interface RefreshAsk {
  /** `force_refresh`: refresh even when the token is still fresh. */
  force: boolean;
  /** `refresh_github_app_jwt_token`: for GitHub App connections, mint a new app JWT and installation token. */
  githubAppJwt: boolean;
}

/** True when these credentials can be refreshed at all (an OAuth 2 token without a refresh token cannot). */
export function isRefreshable(credentials: Credentials): boolean {
  if (credentials.type === 'OAUTH2') {
    const refreshToken = (credentials as { refresh_token?: unknown }).refresh_token;
    return typeof refreshToken === 'string' && refreshToken !== '';
  }
  return REISSUED_MODES.has(credentials.type);
}

/**
 * Whether a read must refresh first: the token expires within `marginMs` (Nango refreshes 15 minutes
 * ahead), or the caller forces it. Credentials without an expiry are only refreshed on demand.
 */
export function needsRefresh(
  credentials: Credentials,
  ask: RefreshAsk,
  nowMs: number,
  marginMs: number,
): boolean {
  if (!isRefreshable(credentials)) return false;
  if (ask.force) return true;
  if (ask.githubAppJwt && GITHUB_APP_MODES.has(credentials.type)) return true;
  if (credentials.type === 'CUSTOM') return false;
  const expiresAt = expiresAtOf(credentials);
  if (!expiresAt) return false;
  return expiresAt.getTime() - nowMs < effectiveMarginMs(credentials, expiresAt, marginMs);
}

/**
 * Tokens Switchboard obtains itself (JWT, TWO_STEP, BILL) carry `issued_at`. One that lives less than twice
 * the margin (Ghost's 5-minute JWT against 15 minutes) is refreshed at half its life, not on every read.
 */
function effectiveMarginMs(credentials: Credentials, expiresAt: Date, marginMs: number): number {
  const issued = (credentials as { issued_at?: unknown }).issued_at;
  const issuedMs = typeof issued === 'string' ? Date.parse(issued) : NaN;
  if (!Number.isFinite(issuedMs) || issuedMs >= expiresAt.getTime()) return marginMs;
  return Math.min(marginMs, (expiresAt.getTime() - issuedMs) / 2);
}

const JUST_REFRESHED_MS = 30_000;

/**
 * Some providers issue tokens that live less than the refresh margin; without this, every read would
 * refresh them again. A token refreshed moments ago that has not expired yet is handed out as it is.
 */
export function justRefreshed(
  lastRefreshSuccess: Date | null,
  credentials: Credentials,
  nowMs: number,
): boolean {
  const expiresAt = expiresAtOf(credentials);
  if (!lastRefreshSuccess || !expiresAt) return false;
  return nowMs - lastRefreshSuccess.getTime() < JUST_REFRESHED_MS && expiresAt.getTime() > nowMs + 5_000;
}

/**
 * How long to wait after the n-th consecutive failure before the provider is asked again on a normal
 * read: `baseMs`, doubling per further failure, capped at `maxMs`. A forced refresh skips the wait.
 */
export function backoffMs(failures: number, baseMs: number, maxMs: number): number {
  if (failures <= 0) return 0;
  const exponent = Math.min(failures - 1, 30);
  return Math.min(baseMs * 2 ** exponent, maxMs);
}

/** OAuth 2 providers may omit the refresh token on a refresh answer; the old one then stays valid. */
export function keepRefreshToken(previous: Credentials, next: Credentials): Credentials {
  if (next.type !== 'OAUTH2' || previous.type !== 'OAUTH2') return next;
  const nextToken = (next as { refresh_token?: unknown }).refresh_token;
  const previousToken = (previous as { refresh_token?: unknown }).refresh_token;
  if ((typeof nextToken === 'string' && nextToken !== '') || typeof previousToken !== 'string') return next;
  return { ...next, refresh_token: previousToken };
}
