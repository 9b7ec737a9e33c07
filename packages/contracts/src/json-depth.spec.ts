import { jsonDepthExceeds } from './json-depth';

describe('jsonDepthExceeds', () => {
  const nested = (levels: number, open = '[', close = ']') => open.repeat(levels) + close.repeat(levels);

  it('counts arrays and objects, up to the limit included', () => {
    expect(jsonDepthExceeds(nested(64), 64)).toBe(false);
    expect(jsonDepthExceeds(nested(65), 64)).toBe(true);
    expect(jsonDepthExceeds('{"a":'.repeat(65) + '1' + '}'.repeat(65), 64)).toBe(true);
    expect(jsonDepthExceeds('{"a":[{"b":[1,2,{"c":null}]}]}', 5)).toBe(false);
    expect(jsonDepthExceeds('{"a":[{"b":[1,2,{"c":null}]}]}', 4)).toBe(true);
  });

  it('ignores brackets inside strings, escaped quotes included', () => {
    expect(jsonDepthExceeds(JSON.stringify({ s: '['.repeat(1000) }), 2)).toBe(false);
    expect(jsonDepthExceeds(JSON.stringify({ s: 'a\\"[[[["b' }), 1)).toBe(false);
    expect(jsonDepthExceeds(JSON.stringify(['\\', ['x']]), 1)).toBe(true);
    expect(jsonDepthExceeds(Buffer.from(JSON.stringify(['\\', ['x']])), 1)).toBe(true);
    expect(jsonDepthExceeds(Buffer.from(JSON.stringify({ s: 'a\\"[[[' })), 1)).toBe(false);
    // An unterminated string: nothing after it counts (JSON.parse refuses the text anyway).
    expect(jsonDepthExceeds('["abc[[[[', 1)).toBe(false);
  });

  it('reads bytes as well as text, multi-byte characters included', () => {
    const body = Buffer.from(JSON.stringify({ é: ['ü', { 日本: [[1]] }] }));
    expect(jsonDepthExceeds(body, 5)).toBe(false);
    expect(jsonDepthExceeds(body, 4)).toBe(true);
  });

  it('scans 10,000 levels without recursion', () => {
    expect(jsonDepthExceeds(nested(10_000), 64)).toBe(true);
    expect(jsonDepthExceeds(Buffer.from(nested(1_000_000)), 1_000_000)).toBe(false);
  });
});
