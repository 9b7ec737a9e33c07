import { recordJson } from './record-json';

const metadata = {
  first_seen_at: '2026-11-25T10:00:00.123456+00:00',
  last_modified_at: '2026-11-25T11:00:00.5+00:00',
  last_action: 'UPDATED' as const,
  deleted_at: null,
  pruned_at: null,
  cursor: 'Y3Vyc29y',
};

/** The chunks as the reply carries them (bytes as they are, text as UTF-8). */
const joined = (chunks: (Buffer | string)[]) =>
  Buffer.concat(chunks.map((c) => (typeof c === 'string' ? Buffer.from(c) : c)));

/** What GET /records answered before the records were passed through as text. */
const asObjects = (payload: Record<string, unknown> | null, externalId: string) =>
  JSON.stringify({ ...(payload ?? {}), id: externalId, _nango_metadata: metadata });

describe('recordJson', () => {
  it.each([
    ['id first, the usual case', { id: 'r-1', name: 'Ada', tags: ['a', 'b'], nested: { id: 'x' } }, 'r-1'],
    ['only an id', { id: 'r-2' }, 'r-2'],
    ['id not first', { name: 'Ada', id: 'r-3' }, 'r-3'],
    ['a numeric id (stored as its string)', { id: 7, name: 'Ada' }, '7'],
    ['an id that needs escaping', { id: 'a"b\\c\u2028', v: 1 }, 'a"b\\c\u2028'],
    ['a payload with its own _nango_metadata', { id: 'r-4', _nango_metadata: { mine: true } }, 'r-4'],
    [
      'a value that looks like the key',
      { id: 'r-5', note: '"_nango_metadata"', x: '_nango_metadata' },
      'r-5',
    ],
    ['an id prefix of a longer one', { id: 'r-60', v: 1 }, 'r-6'],
    ['multi-byte text beside the id', { id: 'é-1', name: 'Zoë 日本 🎉' }, 'é-1'],
  ])('writes what JSON.stringify of the record object writes: %s', (_case, payload, externalId) => {
    const text = joined(recordJson(Buffer.from(JSON.stringify(payload)), externalId, metadata)).toString();
    expect(text).toBe(asObjects(payload, externalId));
    expect(JSON.parse(text)).toEqual({ ...payload, id: externalId, _nango_metadata: metadata });
  });

  it('writes a pruned record (no payload) as its id and metadata', () => {
    expect(joined(recordJson(null, 'r-7', metadata)).toString()).toBe(asObjects(null, 'r-7'));
  });
});
