/** The script's abortSignal: fired when the run's wall clock is up, or the run was stopped from outside. */

type Listener = (event: { type: 'abort'; target: RunAbortSignal }) => void;

export interface RunAbortSignal {
  aborted: boolean;
  reason: Error | undefined;
  onabort: Listener | null;
  addEventListener(type: string, fn: unknown): void;
  removeEventListener(type: string, fn: unknown): void;
  throwIfAborted(): void;
}

export function createAbortSignal(): { signal: RunAbortSignal; abort: (message: string) => void } {
  const listeners = new Set<Listener>();
  const signal: RunAbortSignal = {
    aborted: false,
    reason: undefined,
    onabort: null,
    addEventListener(type, fn) {
      if (type === 'abort' && typeof fn === 'function') listeners.add(fn as Listener);
    },
    removeEventListener(_type, fn) {
      listeners.delete(fn as Listener);
    },
    throwIfAborted() {
      if (this.aborted) throw this.reason;
    },
  };
  const abort = (message: string): void => {
    if (signal.aborted) return;
    signal.aborted = true;
    signal.reason = new Error(message);
    const event = { type: 'abort' as const, target: signal };
    for (const fn of [signal.onabort, ...listeners]) {
      try {
        if (typeof fn === 'function') fn(event);
      } catch {
        // a listener's failure must not stop the others
      }
    }
  };
  return { signal, abort };
}
