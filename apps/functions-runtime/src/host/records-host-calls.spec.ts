import { MAX_RECORD_BYTES, recordsMessageBytes } from '@switchboard/contracts';
import { groupsOf } from './records-host-calls';

const records = (n: number, bytes: number) =>
  Array.from({ length: n }, (_, i) => ({ id: `r${i}`, body: 'x'.repeat(bytes) }));

describe('groupsOf (records per NATS message)', () => {
  it('sends a batch of 1000 records of 1 KB in one message on an 8 MB server, in order', () => {
    const batch = records(1000, 1000);
    const groups = groupsOf('batchSave', 'Item', batch, recordsMessageBytes(8 * 1024 * 1024));
    expect(groups).toHaveLength(1);
    expect(groups[0]!.map((r) => r.id)).toEqual(batch.map((r) => r.id));
  });

  it('splits the same batch on a server with the 1 MB default, keeping every record once and in order', () => {
    const batch = records(1000, 1000);
    const groups = groupsOf('batchSave', 'Item', batch, recordsMessageBytes(1024 * 1024));
    expect(groups.length).toBeGreaterThan(1);
    for (const group of groups) expect(Buffer.byteLength(JSON.stringify(group))).toBeLessThan(1024 * 1024);
    expect(groups.flat().map((r) => r.id)).toEqual(batch.map((r) => r.id));
  });

  it('refuses a record without an id or over the size cap, naming it', () => {
    expect(() => groupsOf('batchSave', 'Item', [{ id: 'a' }, { name: 'b' }], 1 << 20)).toThrow(
      /record 1 of model "Item" has no id/,
    );
    expect(() =>
      groupsOf('batchSave', 'Item', [{ id: 'big', body: 'x'.repeat(MAX_RECORD_BYTES) }], 1 << 20),
    ).toThrow(/record 0 of model "Item" is \d+ bytes, over the limit/);
  });

  it('checks a batch the sandbox sent as data as strictly as parsed JSON text', () => {
    // A copy can hold what JSON cannot: a NaN id (JSON text would have made it null) or a bigint.
    expect(() => groupsOf('batchSave', 'Item', [{ id: 'a' }, { id: NaN }], 1 << 20)).toThrow(
      /record 1 of model "Item" has no id/,
    );
    expect(() => groupsOf('batchSave', 'Item', [{ id: 'a', n: 10n }], 1 << 20)).toThrow(
      /record 0 of model "Item" is not JSON data/,
    );
    // Dates and undefined are JSON data: the size counted is their JSON's.
    const [group] = groupsOf('batchSave', 'Item', [{ id: 'd', at: new Date(0), gone: undefined }], 1 << 20);
    expect(JSON.stringify(group)).toBe('[{"id":"d","at":"1970-01-01T00:00:00.000Z"}]');
  });
});
