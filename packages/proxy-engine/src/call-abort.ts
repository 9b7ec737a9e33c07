import { EventEmitter } from 'node:events';

/**
 * Stops one proxied call's upstream work when its caller leaves. An EventEmitter with `aborted` and an
 * `abort` event, which undici accepts as a request `signal`: an AbortController and the EventTarget
 * listeners undici would hang on its signal cost about 6 µs per call, ten times this.
 */
export class CallAbort extends EventEmitter {
  aborted = false;
  reason: Error | undefined;

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = Object.assign(new Error('The caller went away'), { name: 'AbortError' });
    this.emit('abort');
  }

  /** Resolves after `ms`, or rejects as soon as the call is aborted. */
  pause(ms: number): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.aborted) {
        reject(this.reason);
        return;
      }
      const onAbort = () => {
        clearTimeout(timer);
        reject(this.reason);
      };
      const timer = setTimeout(() => {
        this.off('abort', onAbort);
        resolve();
      }, ms);
      this.once('abort', onAbort);
    });
  }
}
