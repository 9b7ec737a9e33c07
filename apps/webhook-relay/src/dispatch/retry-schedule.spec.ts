import { nextAttempt, parseRetryAfter, parseRetrySchedule } from './retry-schedule';

describe('retry schedule', () => {
  it("parses Svix's schedule and compressed test schedules", () => {
    expect(parseRetrySchedule('0,5s,5m,30m,2h,5h,10h,10h')).toEqual([
      0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000,
    ]);
    expect(parseRetrySchedule('0, 50ms, 3s')).toEqual([0, 50, 3_000]);
    expect(parseRetrySchedule('0,soon')).toBe('"soon" is not a duration (e.g. 0, 500ms, 5s, 2h)');
    expect(parseRetrySchedule('0,,1s')).toBe('must be a comma-separated list of durations');
  });

  it('waits the next delay of the schedule (plus at most 10 % jitter) and stops when it is exhausted', () => {
    const schedule = [0, 1_000, 10_000];
    expect(nextAttempt(schedule, 1, 0, undefined, () => 0)).toEqual({ retry: true, at: new Date(1_000) });
    expect(nextAttempt(schedule, 2, 0, undefined, () => 0.999)).toEqual({
      retry: true,
      at: new Date(10_999),
    });
    expect(nextAttempt(schedule, 3, 0)).toEqual({ retry: false });
  });

  it('waits at least as long as Retry-After asks', () => {
    expect(nextAttempt([0, 1_000], 1, 0, 30_000, () => 0)).toEqual({ retry: true, at: new Date(30_000) });
    expect(parseRetryAfter('2', 0)).toBe(2_000);
    expect(parseRetryAfter(new Date(5_000).toUTCString(), 0)).toBe(5_000);
    expect(parseRetryAfter('999999999', 0)).toBe(24 * 3600 * 1000);
    expect(parseRetryAfter('soon', 0)).toBeUndefined();
  });
});
