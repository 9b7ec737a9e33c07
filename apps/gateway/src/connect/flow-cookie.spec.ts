import { createHash } from 'node:crypto';
import { clearedFlowCookies, flowCookies, isFlowState, newBrowserNonce, readFlowNonce } from './flow-cookie';

const state = '0b6a3f5e-2c1d-4e8f-9a7b-6c5d4e3f2a1b';

describe('flow cookie', () => {
  it('binds with the SHA-256 of a fresh nonce, never the nonce itself', () => {
    const a = newBrowserNonce();
    const b = newBrowserNonce();
    expect(a.nonce).not.toBe(b.nonce);
    expect(a.binding).toBe(createHash('sha256').update(a.nonce).digest('base64url'));
  });

  it('is Secure only when the gateway is served over https', () => {
    expect(flowCookies(state, 'n', false)[0]).toBe(
      `sb_oauth_${state}=n; Path=/oauth/callback; Max-Age=900; HttpOnly; SameSite=Lax`,
    );
    expect(flowCookies(state, 'n', true).every((c) => c.endsWith('; Secure'))).toBe(true);
    expect(clearedFlowCookies(state, true)[1]).toBe(
      `sb_oauth_${state}=; Path=/app-auth/connect; Max-Age=0; HttpOnly; SameSite=Lax; Secure`,
    );
  });

  it("reads only this state's cookie", () => {
    expect(readFlowNonce(`a=1; sb_oauth_${state}=nonce-1; sb_oauth_other=x`, state)).toBe('nonce-1');
    expect(readFlowNonce('sb_oauth_other=x', state)).toBeUndefined();
    expect(readFlowNonce(undefined, state)).toBeUndefined();
    expect(isFlowState(state)).toBe(true);
    expect(isFlowState('../x')).toBe(false);
  });
});
