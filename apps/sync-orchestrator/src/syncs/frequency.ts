import { MIN_SYNC_INTERVAL_MS } from '@switchboard/contracts';
import ms from 'ms';

export interface SyncInterval {
  /** The normalised interval Nango answers (`every hour` → `1h`, `every 2 hours` → `2 hours`). */
  interval: string;
  ms: number;
}

/** Nango's named frequencies and the interval each stands for. */
const NAMED: Record<string, string> = {
  'half day': '12h',
  'half hour': '30m',
  'quarter hour': '15m',
  hour: '1h',
  day: '1d',
  week: '1w',
  month: '30d',
};

export type IntervalProblem = 'invalid' | 'too_short';

/**
 * A sync's `runs` (or a frequency override) as an interval: `every ` is optional, the named ones map to
 * their interval, anything else is read by `ms`. Under 30 s is refused, as Nango does.
 */
export function parseSyncInterval(frequency: string): SyncInterval | IntervalProblem {
  const spec = frequency
    .trim()
    .toLowerCase()
    .replace(/^every\s+/, '');
  const interval = NAMED[spec] ?? spec;
  let value: number | undefined;
  try {
    value = ms(interval as ms.StringValue) as number | undefined;
  } catch {
    value = undefined;
  }
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) return 'invalid';
  if (value < MIN_SYNC_INTERVAL_MS) return 'too_short';
  return { interval, ms: value };
}
