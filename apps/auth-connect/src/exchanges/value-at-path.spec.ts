import { valueAtPath } from './value-at-path';

describe('valueAtPath', () => {
  const answer = {
    sub: 'u-1',
    accounts: [
      { account_id: 'a-1', is_default: false },
      { account_id: 'a-2', is_default: true },
    ],
  };

  it('reads a dot path and picks an array element by one of its fields', () => {
    expect(valueAtPath(answer, 'sub')).toBe('u-1');
    expect(valueAtPath(answer, 'accounts.1.account_id')).toBe('a-2');
    expect(valueAtPath(answer, 'accounts[is_default=true].account_id')).toBe('a-2');
    expect(valueAtPath(answer, 'accounts[account_id=a-1].is_default')).toBe(false);
  });

  it('is undefined when no element matches or the step is no array', () => {
    expect(valueAtPath(answer, 'accounts[account_id=a-9].account_id')).toBeUndefined();
    expect(valueAtPath(answer, 'sub[is_default=true]')).toBeUndefined();
    expect(valueAtPath(answer, 'missing.deeper')).toBeUndefined();
  });
});
