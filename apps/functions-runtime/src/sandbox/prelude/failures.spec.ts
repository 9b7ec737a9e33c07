import { ActionError, describeError, failure, MESSAGE_CHARS } from './failures';
import { formatLogArgs, levelOf } from './log-format';
import { plainData } from './plain-data';
import { successOf } from './run';

const notHost = () => false;

describe('prelude results and failures', () => {
  it('answers an output as a success, and refuses one that is not JSON or over the limit', () => {
    expect(JSON.parse(successOf({ a: 1 }, 100))).toEqual({ status: 'success', output: { a: 1 } });
    expect(JSON.parse(successOf(undefined, 100))).toEqual({ status: 'success' });
    expect(JSON.parse(successOf({ big: 'x'.repeat(200) }, 100))).toMatchObject({
      code: 'script_output_too_large',
      message: 'the output is over 100 bytes',
    });
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(JSON.parse(successOf(cycle, 100))).toMatchObject({ code: 'script_runtime_error' });
  });

  it('answers an ActionError with its payload, and other errors by name and message', () => {
    const action = JSON.parse(describeError(new ActionError({ message: 'nope', field: 'x' }), notHost, true));
    expect(action).toEqual({
      status: 'failure',
      code: 'action_script_runtime_error',
      message: 'nope',
      payload: { message: 'nope', field: 'x' },
    });
    const thrown = JSON.parse(describeError(new TypeError('bad'), notHost, true));
    expect(thrown).toMatchObject({
      code: 'script_runtime_error',
      message: 'TypeError: bad',
      payload: { name: 'TypeError' },
    });
    expect(JSON.parse(describeError(new TypeError('bad'), notHost, false)).payload).toBeUndefined();
    expect(JSON.parse(describeError({ odd: 1 }, notHost, false)).message).toBe(
      'the function threw {"odd":1}',
    );
  });

  it('answers a host refusal with the host’s code, and an allocation failure as the memory limit', () => {
    const refused = Object.assign(new Error('not this model'), { code: 'script_forbidden_call' });
    expect(JSON.parse(describeError(refused, () => true, false))).toMatchObject({
      code: 'script_forbidden_call',
    });
    const other = Object.assign(new Error('down'), { code: 'upstream_unavailable' });
    expect(JSON.parse(describeError(other, () => true, false))).toMatchObject({
      code: 'script_runtime_error',
      cause: { code: 'upstream_unavailable' },
    });
    const memory = JSON.parse(
      describeError(new RangeError('Array buffer allocation failed'), notHost, false),
    );
    expect(memory.code).toBe('script_memory_limit');
  });

  it('cuts a long message', () => {
    expect(JSON.parse(failure('c', 'm'.repeat(MESSAGE_CHARS + 10))).message).toHaveLength(MESSAGE_CHARS);
  });

  it('formats log arguments and takes a trailing { level }', () => {
    expect(formatLogArgs(['a', 1, { b: 2 }, undefined])).toBe('a 1 {"b":2} undefined');
    expect(levelOf(['x', { level: 'warn' }])).toEqual(['warn', ['x']]);
    expect(levelOf([{ level: 'warn' }])).toEqual(['info', [{ level: 'warn' }]]);
  });

  it('sends as data only what JSON would carry the same way', () => {
    expect(plainData({ id: '1', n: [1, null, { d: new Date(0) }] })).toBe(true);
    expect(plainData({ m: new Map() })).toBe(false);
    expect(plainData({ toJSON: () => 1 })).toBe(false);
    expect(plainData(10n)).toBe(false);
    let deep: unknown = 1;
    for (let i = 0; i < 70; i++) deep = [deep];
    expect(plainData(deep)).toBe(false);
  });
});
