import { backoffMs, isRefreshable, justRefreshed, keepRefreshToken, needsRefresh } from './refresh-policy';

const MARGIN = 15 * 60_000;
const now = Date.parse('2025-01-01T12:00:00.000Z');
const oauth2 = (expiresInMs: number | undefined, refresh_token: string | null = 'rt') => ({
  type: 'OAUTH2',
  access_token: 'at',
  ...(refresh_token !== null ? { refresh_token } : {}),
  ...(expiresInMs !== undefined ? { expires_at: new Date(now + expiresInMs).toISOString() } : {}),
});
const plain = { force: false, githubAppJwt: false };

describe('needsRefresh', () => {
  it('refreshes a token expiring within 15 minutes, and not one expiring just after', () => {
    expect(needsRefresh(oauth2(14 * 60_000 + 59_000), plain, now, MARGIN)).toBe(true);
    expect(needsRefresh(oauth2(15 * 60_000 + 1_000), plain, now, MARGIN)).toBe(false);
    expect(needsRefresh(oauth2(-60_000), plain, now, MARGIN)).toBe(true);
  });

  it('refreshes a token without an expiry only when forced', () => {
    expect(needsRefresh(oauth2(undefined), plain, now, MARGIN)).toBe(false);
    expect(needsRefresh(oauth2(undefined), { force: true, githubAppJwt: false }, now, MARGIN)).toBe(true);
  });

  it('never refreshes what cannot be refreshed: OAuth 2 without a refresh token, API keys, basic auth', () => {
    expect(needsRefresh(oauth2(-1, null), { force: true, githubAppJwt: false }, now, MARGIN)).toBe(false);
    expect(isRefreshable({ type: 'OAUTH2', access_token: 'at', refresh_token: '' })).toBe(false);
    expect(
      needsRefresh({ type: 'API_KEY', apiKey: 'k' }, { force: true, githubAppJwt: true }, now, MARGIN),
    ).toBe(false);
    expect(
      needsRefresh(
        { type: 'BASIC', username: 'u', password: 'p' },
        { force: true, githubAppJwt: false },
        now,
        MARGIN,
      ),
    ).toBe(false);
  });

  it('re-issues client-credentials and app tokens near expiry; the GitHub App flag forces app tokens only', () => {
    const cc = { type: 'OAUTH2_CC', token: 't', expires_at: new Date(now + 60_000).toISOString() };
    expect(needsRefresh(cc, plain, now, MARGIN)).toBe(true);
    const app = { type: 'APP', access_token: 't', expires_at: new Date(now + 3_600_000).toISOString() };
    expect(needsRefresh(app, plain, now, MARGIN)).toBe(false);
    expect(needsRefresh(app, { force: false, githubAppJwt: true }, now, MARGIN)).toBe(true);
    expect(needsRefresh(oauth2(3_600_000), { force: false, githubAppJwt: true }, now, MARGIN)).toBe(false);
  });
});

describe('backoffMs', () => {
  it('grows with each consecutive failure up to the cap', () => {
    expect([0, 1, 2, 3, 4].map((n) => backoffMs(n, 30_000, 100_000))).toEqual([
      0, 30_000, 60_000, 100_000, 100_000,
    ]);
    expect(backoffMs(1_000, 30_000, 3_600_000)).toBe(3_600_000);
  });
});

describe('keepRefreshToken', () => {
  it('keeps the old refresh token when the provider sent none, and takes a rotated one', () => {
    const previous = { type: 'OAUTH2', access_token: 'a1', refresh_token: 'r1' };
    expect(keepRefreshToken(previous, { type: 'OAUTH2', access_token: 'a2' })).toEqual({
      type: 'OAUTH2',
      access_token: 'a2',
      refresh_token: 'r1',
    });
    expect(
      keepRefreshToken(previous, { type: 'OAUTH2', access_token: 'a2', refresh_token: 'r2' }),
    ).toMatchObject({ refresh_token: 'r2' });
  });
});

describe('justRefreshed', () => {
  it('hands out a short-lived token refreshed moments ago instead of refreshing it on every read', () => {
    const fiveMinutes = oauth2(5 * 60_000);
    expect(justRefreshed(new Date(now - 10_000), fiveMinutes, now)).toBe(true);
    expect(justRefreshed(new Date(now - 60_000), fiveMinutes, now)).toBe(false);
    expect(justRefreshed(null, fiveMinutes, now)).toBe(false);
    // Never a token that is about to expire or already has.
    expect(justRefreshed(new Date(now - 1_000), oauth2(1_000), now)).toBe(false);
  });
});

describe('tokens Switchboard obtains itself (issued_at)', () => {
  const jwt = (lifetimeMs: number, ageMs: number) => ({
    type: 'JWT',
    token: 't',
    issued_at: new Date(now - ageMs).toISOString(),
    expires_at: new Date(now - ageMs + lifetimeMs).toISOString(),
  });

  it('refreshes a token shorter-lived than twice the margin at half its life, not on every read', () => {
    expect(needsRefresh(jwt(5 * 60_000, 60_000), plain, now, MARGIN)).toBe(false);
    expect(needsRefresh(jwt(5 * 60_000, 151_000), plain, now, MARGIN)).toBe(true);
  });

  it('keeps the margin for a long-lived one', () => {
    expect(needsRefresh(jwt(60 * 60_000, 44 * 60_000), plain, now, MARGIN)).toBe(false);
    expect(needsRefresh(jwt(60 * 60_000, 46 * 60_000), plain, now, MARGIN)).toBe(true);
  });
});
