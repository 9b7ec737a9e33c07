import { Buffer, boundRun, part } from './context';
import { getRandomValues, randomUUID } from './crypto';
import type { ScriptValue } from './isolate';
import { formatLogArgs, LEVELS, levelRank } from './log-format';

/** The globals Nango's runner gives scripts: console, timers, text codecs, atob/btoa, crypto, URL, Buffer. */

// ---- logging ----------------------------------------------------------------------------------------
let minLevel = 0;

/** nango.setLogger({ level }). */
export const setLogLevel = (level: unknown): void => {
  if (typeof level !== 'string' || !Object.hasOwn(LEVELS, level)) {
    throw new TypeError('setLogger needs { level: "debug" | "info" | "warn" | "error" | "off" }');
  }
  minLevel = LEVELS[level]!;
};

export const log = (level: string, args: readonly unknown[]): void => {
  const { hostLog, meta } = boundRun('logging');
  if (levelRank(level) < minLevel) return;
  let message = formatLogArgs(args);
  if (message.length > meta.logLineChars) message = message.slice(0, meta.logLineChars) + '…';
  hostLog.applySync(undefined, [level, message]);
};

const consoleObject = {
  log: (...a: unknown[]) => log('info', a),
  info: (...a: unknown[]) => log('info', a),
  debug: (...a: unknown[]) => log('debug', a),
  warn: (...a: unknown[]) => log('warn', a),
  error: (...a: unknown[]) => log('error', a),
};

// ---- timers (bounded by the run's wall clock: the isolate is gone when it ends) ----------------------
// Each pending timer holds a host timer: capped, so a script cannot pile them up in the host's heap.
const MAX_TIMERS = 1000;
const timers = new Map<number, true>();
let nextTimer = 1;
const setTimeout = (fn: unknown, ms?: unknown, ...args: unknown[]): number => {
  const { hostSleep } = boundRun('setTimeout');
  if (typeof fn !== 'function') throw new TypeError('setTimeout needs a function');
  if (timers.size >= MAX_TIMERS) throw new RangeError('too many pending timers (' + MAX_TIMERS + ')');
  const id = nextTimer++;
  timers.set(id, true);
  void hostSleep.apply(undefined, [Math.max(0, Number(ms) || 0)], { result: { promise: true } }).then(() => {
    if (timers.delete(id)) fn(...args);
  });
  return id;
};
const clearTimeout = (id: number): void => {
  timers.delete(id);
};

// ---- text and bytes ---------------------------------------------------------------------------------
class TextEncoder {
  get encoding(): string {
    return 'utf-8';
  }
  encode(s: unknown = ''): Uint8Array {
    const b = Buffer().from(String(s), 'utf8');
    return new Uint8Array(b.buffer, b.byteOffset, b.length);
  }
}
class TextDecoder {
  constructor(label: unknown = 'utf-8') {
    if (!/^utf-?8$/i.test(String(label))) throw new RangeError('only utf-8 is supported');
  }
  get encoding(): string {
    return 'utf-8';
  }
  decode(bytes?: ScriptValue): string {
    if (bytes === undefined) return '';
    const view = ArrayBuffer.isView(bytes)
      ? new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)
      : new Uint8Array(bytes);
    return Buffer().from(view).toString('utf8');
  }
}

export function installGlobals(): void {
  const g = globalThis;
  const setGlobal = (name: string, value: unknown) =>
    Object.defineProperty(g, name, { value, writable: true, configurable: true, enumerable: false });
  const installed: Record<string, unknown> = {
    console: consoleObject,
    setTimeout,
    clearTimeout,
    TextEncoder,
    TextDecoder,
    atob: (s: unknown) => Buffer().from(String(s), 'base64').toString('latin1'),
    btoa: (s: unknown) => Buffer().from(String(s), 'latin1').toString('base64'),
    // Web Crypto's two synchronous calls (no subtle).
    crypto: { randomUUID, getRandomValues },
  };
  for (const [name, value] of Object.entries(installed)) setGlobal(name, value);
  // Loaded when a script first reads them; a script that assigns one first never loads it.
  const lazy: [string, () => unknown][] = [
    ['URL', () => part('URL')],
    ['URLSearchParams', () => part('URLSearchParams')],
    ['Buffer', Buffer],
  ];
  for (const [name, load] of lazy) {
    Object.defineProperty(g, name, {
      configurable: true,
      enumerable: false,
      get() {
        const value = load();
        // Undefined while the part is loading (its own module looked for the global): the getter stays.
        if (value !== undefined) setGlobal(name, value);
        return value;
      },
      set(value: unknown) {
        setGlobal(name, value);
      },
    });
  }
}
