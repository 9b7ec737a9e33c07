interface BreakerState {
  failures: number[];
  openUntil: number;
  probing: boolean;
}

/**
 * One breaker per destination URL, in this process: `threshold` failures within `windowMs` open it for
 * `cooldownMs`; then a single probe goes through, and its outcome closes the breaker or opens it again.
 * While it is open, that endpoint's deliveries wait without spending an attempt, so a dead endpoint costs
 * neither retries nor the concurrency the healthy ones need.
 */
export class CircuitBreakers {
  private readonly states = new Map<string, BreakerState>();

  constructor(
    private readonly threshold: number,
    private readonly windowMs: number,
    private readonly cooldownMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether an attempt may start now; a half-open breaker lets exactly one through. */
  tryPass(url: string): boolean {
    const state = this.states.get(url);
    if (!state || state.openUntil === 0) return true;
    if (this.now() < state.openUntil || state.probing) return false;
    state.probing = true;
    return true;
  }

  /** When the endpoint may be tried again (0 when closed). */
  openUntil(url: string): number {
    const state = this.states.get(url);
    if (!state || state.openUntil === 0) return 0;
    return state.probing ? this.now() + this.cooldownMs : state.openUntil;
  }

  /** URLs that refuse attempts right now. */
  openUrls(): string[] {
    const now = this.now();
    return [...this.states.entries()]
      .filter(([, s]) => s.openUntil !== 0 && (now < s.openUntil || s.probing))
      .map(([url]) => url);
  }

  /**
   * How many breakers are open (refusing until their cooldown ends) and half-open (cooldown over: the
   * next attempt is the probe, or it is under way), for the breaker gauge.
   */
  counts(): { open: number; halfOpen: number } {
    const now = this.now();
    let open = 0;
    let halfOpen = 0;
    for (const s of this.states.values()) {
      if (s.openUntil === 0) continue;
      if (s.probing || now >= s.openUntil) halfOpen++;
      else open++;
    }
    return { open, halfOpen };
  }

  /** Closes the endpoint's breaker; true when it had been open, i.e. the endpoint just came back. */
  success(url: string): boolean {
    const state = this.states.get(url);
    this.states.delete(url);
    return state !== undefined && state.openUntil !== 0;
  }

  failure(url: string): void {
    const now = this.now();
    const state = this.states.get(url) ?? { failures: [], openUntil: 0, probing: false };
    if (state.probing) {
      state.probing = false;
      state.openUntil = now + this.cooldownMs;
      this.states.set(url, state);
      return;
    }
    state.failures = [...state.failures.filter((t) => now - t < this.windowMs), now];
    if (state.failures.length >= this.threshold) {
      state.openUntil = now + this.cooldownMs;
      state.failures = [];
    }
    this.states.set(url, state);
  }
}
