import { CircuitBreakers } from './circuit-breaker';

describe('CircuitBreakers', () => {
  let now = 0;
  const breakers = () => new CircuitBreakers(5, 10_000, 60_000, () => now);

  beforeEach(() => {
    now = 1_000_000;
  });

  it('opens after 5 failures within 10 s, for one endpoint only', () => {
    const b = breakers();
    for (let i = 0; i < 4; i++) b.failure('http://dead');
    expect(b.tryPass('http://dead')).toBe(true);
    b.failure('http://dead');
    expect(b.tryPass('http://dead')).toBe(false);
    expect(b.tryPass('http://alive')).toBe(true);
    expect(b.openUrls()).toEqual(['http://dead']);
    expect(b.openUntil('http://dead')).toBe(now + 60_000);
  });

  it('does not open for failures spread beyond the window', () => {
    const b = breakers();
    for (let i = 0; i < 10; i++) {
      b.failure('http://flaky');
      now += 3_000;
    }
    expect(b.tryPass('http://flaky')).toBe(true);
  });

  it('lets exactly one probe through after the cooldown; its outcome closes or re-opens the breaker', () => {
    const b = breakers();
    for (let i = 0; i < 5; i++) b.failure('http://dead');
    now += 60_000;
    expect(b.tryPass('http://dead')).toBe(true);
    expect(b.tryPass('http://dead')).toBe(false);
    b.failure('http://dead');
    expect(b.tryPass('http://dead')).toBe(false);
    now += 60_000;
    expect(b.tryPass('http://dead')).toBe(true);
    expect(b.success('http://dead')).toBe(true);
    expect(b.tryPass('http://dead')).toBe(true);
    expect(b.openUrls()).toEqual([]);
  });

  it('reports a success as a recovery only when the breaker had opened', () => {
    const b = breakers();
    expect(b.success('http://fine')).toBe(false);
    for (let i = 0; i < 4; i++) b.failure('http://flaky');
    // Failures that never opened the breaker: the endpoint was not considered down.
    expect(b.success('http://flaky')).toBe(false);
    for (let i = 0; i < 5; i++) b.failure('http://dead');
    now += 60_000;
    expect(b.tryPass('http://dead')).toBe(true);
    expect(b.success('http://dead')).toBe(true);
    expect(b.success('http://dead')).toBe(false);
  });

  it('counts open and half-open breakers for the breaker gauge', () => {
    const b = breakers();
    expect(b.counts()).toEqual({ open: 0, halfOpen: 0 });
    for (let i = 0; i < 5; i++) b.failure('http://a');
    for (let i = 0; i < 5; i++) b.failure('http://b');
    b.failure('http://c'); // one failure: still closed
    expect(b.counts()).toEqual({ open: 2, halfOpen: 0 });
    now += 60_000; // both cooldowns over: the next attempt to each is its probe
    expect(b.counts()).toEqual({ open: 0, halfOpen: 2 });
    expect(b.tryPass('http://a')).toBe(true);
    expect(b.tryPass('http://a')).toBe(false); // one probe at a time
    expect(b.counts()).toEqual({ open: 0, halfOpen: 2 });
    b.success('http://a');
    expect(b.tryPass('http://b')).toBe(true);
    b.failure('http://b'); // b's probe failed: open again
    expect(b.counts()).toEqual({ open: 1, halfOpen: 0 });
  });
});
