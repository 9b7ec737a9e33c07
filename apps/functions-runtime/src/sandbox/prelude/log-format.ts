import type { ScriptValue } from './isolate';

/** nango.setLogger({ level }): lines under the level (or all, 'off') are not kept. */
export const LEVELS: Record<string, number> = { debug: 0, info: 1, warn: 2, error: 3, off: 4 };

/** A level's rank; an unknown level counts as info. */
export function levelRank(level: string): number {
  return LEVELS[level] ?? 1;
}

/** One log line of console.log-style arguments: strings as they are, errors by their stack, the rest as JSON. */
export function formatLogArgs(args: readonly unknown[]): string {
  return args
    .map((a) => {
      if (typeof a === 'string') return a;
      if (a instanceof Error) return a.stack || String(a);
      try {
        const s = JSON.stringify(a);
        return s === undefined ? String(a) : s;
      } catch {
        return String(a);
      }
    })
    .join(' ');
}

/** `nango.log(...args, { level })`: a last argument that is only `{ level }` gives the line's level. */
export function levelOf(args: readonly ScriptValue[]): [string, ScriptValue[]] {
  const last = args[args.length - 1];
  if (
    args.length > 1 &&
    last &&
    typeof last === 'object' &&
    Object.keys(last).length === 1 &&
    ['debug', 'info', 'warn', 'error'].includes(last.level)
  ) {
    return [last.level, args.slice(0, -1)];
  }
  return ['info', args.slice()];
}
