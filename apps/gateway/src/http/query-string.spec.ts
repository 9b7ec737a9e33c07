import { parseQueryString } from './query-string';

describe('parseQueryString', () => {
  it('reads bracketed keys the official client sends', () => {
    expect(parseQueryString('tags[end_user_id]=u1&limit=5')).toEqual({
      tags: { end_user_id: 'u1' },
      limit: '5',
    });
  });

  it('never builds an array past 100 elements, whether indexed or pushed with a[] (GHSA-6rw7-vpxm-498p)', () => {
    const pushed = parseQueryString(Array.from({ length: 150 }, (_, i) => `a[]=${i}`).join('&'));
    const indexed = parseQueryString(Array.from({ length: 150 }, (_, i) => `b[${i}]=${i}`).join('&'));
    for (const value of [pushed.a, indexed.b]) {
      expect(Array.isArray(value) && value.length > 100).toBe(false);
    }
  });
});
