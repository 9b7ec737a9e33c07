import { backoffMs, providerWaitMs, quotaExhausted, retryableError, retryableStatus } from './retry-policy';

const none = { retryOn: new Set<number>(), providerCodes: [] as string[] };

describe('retry policy', () => {
  it('retries 5xx only for idempotent methods unless the caller lists the code', () => {
    expect(retryableStatus(503, 'GET', none)).toBe(true);
    expect(retryableStatus(503, 'PUT', none)).toBe(true);
    expect(retryableStatus(503, 'POST', none)).toBe(false);
    expect(retryableStatus(503, 'PATCH', none)).toBe(false);
    expect(retryableStatus(503, 'POST', { ...none, retryOn: new Set([503]) })).toBe(true);
    expect(retryableStatus(429, 'POST', none)).toBe(true);
    expect(retryableStatus(404, 'GET', none)).toBe(false);
    expect(retryableStatus(404, 'GET', { ...none, retryOn: new Set([404]) })).toBe(true);
    expect(retryableStatus(409, 'GET', { ...none, providerCodes: ['409'] })).toBe(true);
  });

  it('retries connection failures before sending for any method, resets and timeouts for idempotent ones', () => {
    expect(retryableError({ code: 'ECONNREFUSED' }, 'POST')).toBe(true);
    expect(retryableError({ code: 'ECONNRESET' }, 'GET')).toBe(true);
    expect(retryableError({ code: 'ECONNRESET' }, 'POST')).toBe(false);
    expect(retryableError({ code: 'UND_ERR_HEADERS_TIMEOUT' }, 'DELETE')).toBe(true);
    expect(retryableError({ code: 'SWITCHBOARD_EGRESS_REFUSED' }, 'GET')).toBe(false);
    expect(retryableError(new Error('x'), 'GET')).toBe(false);
  });

  it('backs off exponentially with jitter between half and all of the step, capped', () => {
    for (let attempt = 0; attempt < 8; attempt++) {
      const ceiling = Math.min(1000, 50 * 2 ** attempt);
      expect(backoffMs(attempt, 50, 1000, () => 0)).toBe(ceiling / 2);
      expect(backoffMs(attempt, 50, 1000, () => 0.999999)).toBeLessThanOrEqual(ceiling);
      expect(backoffMs(attempt, 50, 1000, () => 0.999999)).toBeGreaterThan(ceiling * 0.99);
    }
  });

  it('reads Retry-After (seconds or date) and the catalog reset headers', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(providerWaitMs({ 'retry-after': '2' }, undefined, now)).toBe(2000);
    expect(providerWaitMs({ 'retry-after': 'Wed, 01 Jan 2025 00:00:05 GMT' }, undefined, now)).toBe(5000);
    expect(providerWaitMs({}, undefined, now)).toBeUndefined();
    expect(
      providerWaitMs({ 'x-ratelimit-reset': String(now / 1000 + 7) }, { at: ['x-ratelimit-reset'] }, now),
    ).toBe(7000);
    expect(
      providerWaitMs({ 'x-ratelimit-reset': String(now + 3000) }, { at: ['x-ratelimit-reset'] }, now),
    ).toBe(3000);
    expect(providerWaitMs({ 'x-retry-in': '1.5' }, { after: ['x-retry-in'] }, now)).toBe(1500);
  });

  it("sees an exhausted quota only through the catalog's remaining header", () => {
    expect(quotaExhausted({ 'x-ratelimit-remaining': '0' }, { remaining: 'x-ratelimit-remaining' })).toBe(
      true,
    );
    expect(quotaExhausted({ 'x-ratelimit-remaining': '3' }, { remaining: 'x-ratelimit-remaining' })).toBe(
      false,
    );
    expect(quotaExhausted({ 'x-ratelimit-remaining': '0' }, undefined)).toBe(false);
  });
});
