import { z } from 'zod';
import { fieldErrorsFromZod } from './errors';

describe('fieldErrorsFromZod', () => {
  const schema = z
    .object({ name: z.string(), nested: z.object({ on: z.boolean() }).strict().optional() })
    .strict();

  it('gives each unknown key its own error whose path names the key', () => {
    const result = schema.safeParse({ name: 'a', extra: 1, other: 2, nested: { on: true, deep: 3 } });
    expect(result.success).toBe(false);
    expect(fieldErrorsFromZod(result.error!)).toEqual(
      expect.arrayContaining([
        { code: 'unrecognized_keys', message: 'Unrecognized key: "extra"', path: ['extra'] },
        { code: 'unrecognized_keys', message: 'Unrecognized key: "other"', path: ['other'] },
        { code: 'unrecognized_keys', message: 'Unrecognized key: "deep"', path: ['nested', 'deep'] },
      ]),
    );
  });

  it('keeps the path of a bad value and applies the prefix', () => {
    const result = schema.safeParse({ name: 1 });
    expect(fieldErrorsFromZod(result.error!, ['body'])).toEqual([
      { code: 'invalid_type', message: expect.any(String), path: ['body', 'name'] },
    ]);
  });
});
