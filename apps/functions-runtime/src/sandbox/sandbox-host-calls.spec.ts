import { actionScript as action } from './sandbox-request.fixture';
import { runInSandbox, type HostCallArgs } from './sandbox';
import { request } from './sandbox.fixture';

/**
 * How a script's host calls cross out of the sandbox: their arguments as JSON text or as a structured
 * copy (a sync's records batches), and what the host gets when a script tampers with them. Needs
 * `dist/sandbox-lib.js` (the app's build).
 */

describe('runInSandbox', () => {
  it("hands a host call's arguments over as a string of the host's own heap, which its GC counts", async () => {
    // A sync's batchSave sends ~1 MB of JSON per call. Passed bare, such a string arrived as an external
    // string that V8 neither counts nor collects before a full GC: external memory grew by the size of
    // every call (bench/README.md, "Records").
    const received: number[] = [];
    const calls = 40;
    const before = process.memoryUsage().external;
    const result = await runInSandbox(
      request(
        action(`
          const notes = 'x'.repeat(1000);
          const records = Array.from({ length: 1000 }, (_, i) => ({ id: 'r-' + i, notes }));
          for (let i = 0; i < ${calls}; i++) await nango.getConnection(JSON.stringify(records));
          return true;`),
        undefined,
        {
          limits: { ...request('', undefined).limits, cpuTimeMs: 10_000, wallTimeMs: 20_000 },
          hostCall: (name, args) => {
            if (!('json' in args)) throw new Error('expected JSON text');
            received.push((JSON.parse(args.json) as { providerConfigKey: string }).providerConfigKey.length);
            return Promise.resolve(JSON.stringify({ ok: true, value: null }));
          },
        },
      ),
    );
    expect(result.status).toBe('success');
    expect(received).toHaveLength(calls);
    expect(new Set(received).size).toBe(1);
    expect(received[0]).toBeGreaterThan(1_000_000);
    // 40 MB crossed; what is left outside the heap is far less than one call's worth per call.
    expect(process.memoryUsage().external - before).toBeLessThan(15 * 1024 * 1024);
  });

  describe('a records batch', () => {
    const sync = (body: string) =>
      `"use strict";\nmodule.exports = { default: { type: "sync", exec: async (nango) => {\n${body}\n} } };`;
    /** Runs a sync script, keeping what each host call received; every call answers `true`. */
    const runSync = async (body: string) => {
      const received: HostCallArgs[] = [];
      const result = await runInSandbox(
        request(sync(body), undefined, {
          type: 'sync',
          hostCall: (_name, args) => {
            received.push(args);
            return Promise.resolve(JSON.stringify({ ok: true, value: true }));
          },
        }),
      );
      return { result, received };
    };
    /** What the script's `JSON.stringify` gave: the scripts below return it as their output. */
    const scriptJson = (result: unknown) =>
      JSON.parse(JSON.parse((result as { outputJson: string }).outputJson) as string) as unknown;
    /** What the host gets from a call, as the JSON it forwards (JSON text parsed, or data serialised). */
    const forwarded = (args: HostCallArgs) =>
      'json' in args
        ? (JSON.parse(args.json) as unknown)
        : (JSON.parse(JSON.stringify(args.data)) as unknown);

    it('of plain data goes to the host as a structured copy, not as JSON text, and says the same', async () => {
      const { result, received } = await runSync(`
        const records = [
          { id: 'a', n: 1, nested: { list: [1, 'two', null, { deep: true }] }, at: new Date(0) },
          { id: 7, skipped: undefined, nan: NaN, holes: [1, , 3], bare: Object.create(null) },
        ];
        await nango.batchSave(records, 'Item');
        return JSON.stringify({ model: 'Item', records });`);
      expect(result.status).toBe('success');
      expect(received).toHaveLength(1);
      expect('data' in received[0]!).toBe(true);
      // The host gets what JSON.stringify in the script would have given it.
      const expected = scriptJson(result);
      expect(forwarded(received[0]!)).toEqual(expected);
      expect(expected).toMatchObject({
        records: [{ at: '1970-01-01T00:00:00.000Z' }, { nan: null, holes: [1, null, 3] }],
      });
    });

    it.each([
      [
        'a class instance with toJSON',
        'class Money { constructor(c) { this.c = c; } toJSON() { return this.c / 100 + " EUR"; } } const odd = new Money(250);',
      ],
      ['a Map', 'const odd = new Map([["k", 1]]);'],
      ['a function-valued property', 'const odd = { keep: 1, drop() {} };'],
      ['a Proxy (the copy refuses it)', 'const odd = new Proxy({ via: "proxy" }, {});'],
      [
        'a Date whose toJSON the script replaced',
        'Date.prototype.toJSON = function () { return "patched"; }; const odd = new Date(0);',
      ],
      ['a typed array', 'const odd = new Uint8Array([1, 2]);'],
      ['an object nested 70 deep', 'let odd = {}; for (let i = 0; i < 70; i++) odd = { down: odd };'],
    ])('holding %s goes as JSON text, exactly as JSON.stringify gives it', async (_what, setup) => {
      const { result, received } = await runSync(`
        ${setup}
        const records = [{ id: 'plain', n: 1 }, { id: 'odd', odd }];
        await nango.batchSave(records, 'Item');
        return JSON.stringify({ model: 'Item', records });`);
      expect(result.status).toBe('success');
      expect(received).toHaveLength(1);
      expect('json' in received[0]!).toBe(true);
      const expected = scriptJson(result);
      expect(forwarded(received[0]!)).toEqual(expected);
    });

    it('decides per chunk of 1000: a chunk with an odd record goes as text, the others as data', async () => {
      const { result, received } = await runSync(`
        const records = Array.from({ length: 2500 }, (_, i) => ({ id: 'r' + i }));
        records[1500].at = new Map();
        await nango.batchSave(records, 'Item');
        return 1;`);
      expect(result.status).toBe('success');
      expect(received.map((args) => ('data' in args ? 'data' : 'json'))).toEqual(['data', 'json', 'data']);
      expect(received.map((args) => (forwarded(args) as { records: unknown[] }).records.length)).toEqual([
        1000, 1000, 500,
      ]);
    });

    it('sends each batch as it was when saved, even when the call waits for a slot', async () => {
      // 20 saves at once (16 run at a time), each batch changed right after its save was called.
      const received: HostCallArgs[] = [];
      const result = await runInSandbox(
        request(
          sync(`
            const saves = [];
            for (let i = 0; i < 20; i++) {
              const batch = [{ id: 'r' + i, state: 'as saved' }];
              saves.push(nango.batchSave(batch, 'Item'));
              batch[0].state = 'changed after';
            }
            await Promise.all(saves);
            return 1;`),
          undefined,
          {
            type: 'sync',
            hostCall: (_name, args) => {
              received.push(args);
              return new Promise((resolve) =>
                setTimeout(() => resolve(JSON.stringify({ ok: true, value: true })), 20),
              );
            },
          },
        ),
      );
      expect(result.status).toBe('success');
      expect(received).toHaveLength(20);
      const states = received.map(
        (args) => (forwarded(args) as { records: { state: string }[] }).records[0]!.state,
      );
      expect(new Set(states)).toEqual(new Set(['as saved']));
      // The first 16 went as copies; the 4 that waited for a slot as JSON text made when they were called.
      expect(received.filter((args) => 'data' in args)).toHaveLength(16);
    });

    it('carries an own "__proto__" key as a plain key: the copy reaches no prototype in the host', async () => {
      const { result, received } = await runSync(`
        const record = JSON.parse('{"__proto__": {"polluted": true}, "id": "x"}');
        await nango.batchSave([record], 'Item');
        return 1;`);
      expect(result.status).toBe('success');
      const sent = received[0] as { data: { records: Record<string, unknown>[] } };
      expect('data' in sent).toBe(true);
      const [record] = sent.data.records;
      // An ordinary object (of the realm isolated-vm builds in, not jest's), its prototype not the script's.
      expect(Object.getPrototypeOf(Object.getPrototypeOf(record))).toBeNull();
      expect((record as { polluted?: boolean }).polluted).toBeUndefined();
      expect(Object.keys(record!)).toEqual(['__proto__', 'id']);
      expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
      expect(JSON.stringify(record)).toBe('{"__proto__":{"polluted":true},"id":"x"}');
    });

    it('holding a bigint or a cycle fails in the script as JSON.stringify does, and nothing is sent', async () => {
      for (const setup of ['const odd = 10n;', 'const odd = {}; odd.self = odd;']) {
        const { result, received } = await runSync(`
          ${setup}
          try { await nango.batchSave([{ id: 'odd', odd }], 'Item'); return 'sent'; }
          catch (e) { return e.name + ': ' + e.message; }`);
        expect(result).toMatchObject({ status: 'success' });
        expect((result as { outputJson: string }).outputJson).toMatch(
          /TypeError: (Do not know how to serialize a BigInt|Converting circular structure)/,
        );
        expect(received).toEqual([]);
      }
    });
  });

  it('refuses a host call whose arguments a script turned into anything but JSON text or an object', async () => {
    const names: string[] = [];
    const result = await runInSandbox(
      request(
        action(`
          const stringify = JSON.stringify;
          JSON.stringify = () => 42;
          let code;
          try { await nango.getConnection(); } catch (e) { code = e.code; } finally { JSON.stringify = stringify; }
          return code;`),
        undefined,
        {
          hostCall: (name) => {
            names.push(name);
            return Promise.resolve(JSON.stringify({ ok: true, value: null }));
          },
        },
      ),
    );
    expect(result).toMatchObject({ status: 'success', outputJson: '"invalid_arguments"' });
    expect(names).toEqual([]);
  });
});
