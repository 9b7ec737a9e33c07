import { parseSyncInterval } from './frequency';

describe('parseSyncInterval', () => {
  it.each([
    ['every hour', '1h', 3_600_000],
    ['every 2 hours', '2 hours', 7_200_000],
    ['every half hour', '30m', 1_800_000],
    ['every quarter hour', '15m', 900_000],
    ['every half day', '12h', 43_200_000],
    ['every day', '1d', 86_400_000],
    ['every week', '1w', 604_800_000],
    ['every month', '30d', 2_592_000_000],
    ['every 30s', '30s', 30_000],
    ['5m', '5m', 300_000],
    ['every 5 minutes', '5 minutes', 300_000],
  ])('%s is %s', (input, interval, value) => {
    expect(parseSyncInterval(input)).toEqual({ interval, ms: value });
  });

  it('refuses less than 30 seconds and what is not a duration', () => {
    expect(parseSyncInterval('every 10s')).toBe('too_short');
    expect(parseSyncInterval('every 29 seconds')).toBe('too_short');
    expect(parseSyncInterval('every blue moon')).toBe('invalid');
    expect(parseSyncInterval('')).toBe('invalid');
  });
});
