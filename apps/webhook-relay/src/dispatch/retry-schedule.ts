import ms from 'ms';

/** `500ms`, `5s`, `2h`, or a bare number of milliseconds; undefined when it is none of these. */
export function parseDuration(value: string): number | undefined {
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const parsed = ms(trimmed as ms.StringValue) as number | undefined;
  return typeof parsed === 'number' && Number.isFinite(parsed) && parsed >= 0 ? parsed : undefined;
}

/** The delay before each attempt; the first is usually 0. Returns a problem description when invalid. */
export function parseRetrySchedule(value: string): number[] | string {
  const parts = value.split(',').map((part) => part.trim());
  if (parts.length === 0 || parts.some((part) => part === ''))
    return 'must be a comma-separated list of durations';
  const delays: number[] = [];
  for (const part of parts) {
    const parsed = parseDuration(part);
    if (parsed === undefined) return `"${part}" is not a duration (e.g. 0, 500ms, 5s, 2h)`;
    delays.push(parsed);
  }
  if (delays.length > 50) return 'at most 50 attempts';
  return delays;
}

export type RetryDecision = { retry: true; at: Date } | { retry: false };

/**
 * When the next attempt happens after `attemptsMade` attempts failed, or no retry when the schedule is
 * exhausted. Each delay gets up to 10 % of jitter so a recovering endpoint is not hit by every retry at
 * once; a `Retry-After` asking for longer wins.
 */
export function nextAttempt(
  schedule: readonly number[],
  attemptsMade: number,
  now: number,
  retryAfterMs?: number,
  random: () => number = Math.random,
): RetryDecision {
  const delay = schedule[attemptsMade];
  if (delay === undefined) return { retry: false };
  const jittered = delay + Math.floor(delay * 0.1 * random());
  return { retry: true, at: new Date(now + Math.max(jittered, retryAfterMs ?? 0)) };
}

/** `Retry-After` in seconds or as an HTTP date; capped at a day so a hostile answer cannot park a delivery forever. */
export function parseRetryAfter(header: string | undefined, now: number): number | undefined {
  if (!header) return undefined;
  const value = header.trim();
  let delayMs: number | undefined;
  if (/^\d+$/.test(value)) delayMs = Number(value) * 1000;
  else {
    const date = Date.parse(value);
    if (!Number.isNaN(date)) delayMs = Math.max(0, date - now);
  }
  return delayMs === undefined ? undefined : Math.min(delayMs, 24 * 3600 * 1000);
}
