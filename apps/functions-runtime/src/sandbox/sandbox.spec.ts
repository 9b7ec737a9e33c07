import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { actionScript as action, sandboxRequest } from './sandbox-request.fixture';
import {
  configurePool,
  configureReadyContexts,
  configureSpares,
  disposeSandbox,
  isolatesReturned,
  pooledIsolates,
  runInSandbox,
  sandboxSettled,
  type HostCallArgs,
  type SandboxRequest,
} from './sandbox';

/**
 * The sandbox alone (no NATS, no host services): real bundles from the nango CLI and hand-written ones.
 * Host calls are answered by a function that refuses them all, as the dispatcher does for a call a
 * function type lacks. Needs `dist/sandbox-lib.js` (the app's build).
 */

const fixture = (name: string) => readFileSync(join(__dirname, '../../test/fixtures', `${name}.cjs`), 'utf8');
/**
 * What CPU time a run that does next to nothing may be charged on a loaded two-core machine (its own
 * binding and answer, with the machine's caches cold); CPU-time checks compare against work well above it.
 */
const BUSY_MACHINE_QUICK_RUN_MS = 100;
/** How late a loaded two-core machine may end a run past its wall clock and grace (threads wait their turn). */
const BUSY_MACHINE_LATE_MS = 5_000;
/** A test that does CPU work in an isolate: its wall time stretches with the machine's load. */
const CPU_TEST_TIMEOUT_MS = 60_000;

const hostCalls: string[] = [];
const LIMITS = {
  memoryMb: 32,
  cpuTimeMs: 1000,
  wallTimeMs: 3000,
  outputBytes: 1024,
  logLines: 3,
  logLineChars: 80,
  logTotalChars: 100_000,
  abortGraceMs: 500,
};
const request = (code: string, input: unknown, overrides: Partial<SandboxRequest> = {}): SandboxRequest =>
  sandboxRequest(LIMITS, code, input, overrides, (name) => hostCalls.push(name));

describe('runInSandbox', () => {
  it('runs a CLI bundle with its inline sourcemap up to its first host call', async () => {
    const result = await runInSandbox(
      request(fixture('create-issue.sourcemap'), { repo: 'o/r', title: 't' }),
    );
    expect(hostCalls).toContain('proxy');
    expect(result).toMatchObject({ status: 'failure', error: { code: 'script_forbidden_call' } });
  });

  it('gives scripts URL, URLSearchParams, Buffer, TextEncoder/Decoder, atob/btoa and a bounded setTimeout', async () => {
    const result = await runInSandbox(
      request(
        action(`
          const url = new URL('https://api.example.com/v1/items?page=2');
          url.searchParams.set('q', 'a b');
          await new Promise((resolve) => setTimeout(resolve, 5));
          return {
            url: url.toString(),
            form: new URLSearchParams({ a: '1', b: 'x&y' }).toString(),
            base64: Buffer.from('user:pass').toString('base64'),
            utf8: new TextDecoder().decode(new TextEncoder().encode('héllo')),
            btoa: btoa('hi'),
          };`),
        {},
      ),
    );
    expect(result.status).toBe('success');
    if (result.status !== 'success') return;
    expect(JSON.parse(result.outputJson!)).toEqual({
      url: 'https://api.example.com/v1/items?page=2&q=a+b',
      form: 'a=1&b=x%26y',
      base64: 'dXNlcjpwYXNz',
      utf8: 'héllo',
      btoa: 'aGk=',
    });
  });

  it('loads URL and Buffer on first use: a script may read, replace or shadow them as on Node', async () => {
    const result = await runInSandbox(
      request(
        action(`
          const before = Object.getOwnPropertyDescriptor(globalThis, 'URL');
          const kinds = [typeof URL, typeof URLSearchParams, typeof Buffer];
          const isView = ArrayBuffer.isView(Buffer.from('x'));
          globalThis.URLSearchParams = 'replaced';
          const replaced = URLSearchParams;
          return { kinds, isView, replaced, lazy: typeof before.get === 'function', enumerable: Object.keys(globalThis).includes('URL') };`),
        {},
      ),
    );
    expect(result.status).toBe('success');
    if (result.status !== 'success') return;
    expect(JSON.parse(result.outputJson!)).toEqual({
      kinds: ['function', 'function', 'function'],
      isView: true,
      replaced: 'replaced',
      lazy: true,
      enumerable: false,
    });
  });

  it('keeps at most the configured log lines, each cut to the configured length', async () => {
    const result = await runInSandbox(
      request(
        action(
          'console.error("x".repeat(500)); for (let i = 0; i < 5; i++) await nango.log("n", i); return null;',
        ),
        {},
      ),
    );
    expect(result.logs).toHaveLength(3);
    expect(result.logs[0]).toMatchObject({ level: 'error' });
    expect(result.logs[0]!.message.length).toBeLessThanOrEqual(81);
    expect(result.logsDropped).toBe(3);
  });

  it('refuses an output over the limit without copying it out of the isolate', async () => {
    const result = await runInSandbox(request(action('return "z".repeat(5000);'), {}));
    expect(result).toMatchObject({ status: 'failure', error: { code: 'script_output_too_large' } });
  });

  it('answers a bundle that does not compile, or exports no exec, with script_load_error', async () => {
    const broken = await runInSandbox(request('module.exports = {', {}));
    expect(broken).toMatchObject({ status: 'failure', error: { code: 'script_load_error' } });
    const empty = await runInSandbox(request('module.exports = { default: {} };', {}));
    expect(empty).toMatchObject({ status: 'failure', error: { code: 'script_load_error' } });
  });

  it('runs a legacy bundle whose default export is the function itself (runAction, fetchData)', async () => {
    const action = `"use strict";
      Object.defineProperty(exports, "__esModule", { value: true });
      exports.default = async function runAction(nango, input) { return { greeting: "hello " + input.name, connection: nango.connectionId }; };`;
    const ran = await runInSandbox(request(action, { name: 'Ada' }));
    expect(ran.status).toBe('success');
    expect(JSON.parse((ran as { outputJson: string }).outputJson)).toEqual({
      greeting: 'hello Ada',
      connection: 'conn-1',
    });
    const sync = `"use strict"; module.exports = async function fetchData(nango) { return nango.variant; };`;
    expect(await runInSandbox(request(sync, undefined, { type: 'sync' }))).toMatchObject({
      status: 'success',
      outputJson: '"base"',
    });
  });

  it("runs a sync's onWebhook with the payload instead of exec when the entry is onWebhook", async () => {
    const sync = `"use strict";
      module.exports = { default: { type: "sync",
        exec: async () => "exec ran",
        onWebhook: async (nango, payload) => ({ handled: payload.type, connection: nango.connectionId }) } };`;
    expect(
      await runInSandbox(request(sync, { type: 'Issue' }, { type: 'sync', entry: 'onWebhook' })),
    ).toMatchObject({
      status: 'success',
      outputJson: JSON.stringify({ handled: 'Issue', connection: 'conn-1' }),
    });
    // The same bundle on a schedule runs exec.
    expect(await runInSandbox(request(sync, undefined, { type: 'sync' }))).toMatchObject({
      status: 'success',
      outputJson: '"exec ran"',
    });
  });

  it("runs a legacy script's exported onWebhookPayloadReceived, and refuses a bundle without a webhook handler", async () => {
    const legacy = `"use strict";
      module.exports = { default: async function fetchData() {},
        onWebhookPayloadReceived: async (nango, payload) => payload.n * 2 };`;
    expect(
      await runInSandbox(request(legacy, { n: 21 }, { type: 'sync', entry: 'onWebhook' })),
    ).toMatchObject({
      status: 'success',
      outputJson: '42',
    });
    const none = `"use strict"; module.exports = { default: { type: "sync", exec: async () => 1 } };`;
    expect(await runInSandbox(request(none, {}, { type: 'sync', entry: 'onWebhook' }))).toMatchObject({
      status: 'failure',
      error: { code: 'script_load_error', message: expect.stringContaining('no webhook handler') },
    });
  });

  it('resolves require("url") (and node:url) to URL and URLSearchParams; another module is not found', async () => {
    const code = `"use strict";
      const { URL, URLSearchParams } = require("url");
      module.exports = { default: { type: "action", exec: async () => {
        const u = new URL("/items?page=2", "https://api.example.com");
        u.searchParams.append("q", "a b");
        let other;
        try { require("fs"); } catch (e) { other = e.message; }
        return { href: u.href, page: new URLSearchParams(u.search).get("page"), same: require("node:url").URL === URL, other };
      } } };`;
    const result = await runInSandbox(request(code, {}));
    expect(result.status).toBe('success');
    expect(JSON.parse((result as { outputJson: string }).outputJson)).toEqual({
      href: 'https://api.example.com/items?page=2&q=a+b',
      page: '2',
      same: true,
      other: expect.stringContaining('Cannot find module "fs"'),
    });
  });

  it('validates the output against the action output schema', async () => {
    const code = `"use strict";
      var z = require("zod");
      module.exports = { default: { type: "action", input: z.object({}), output: z.object({ n: z.number() }),
        exec: async () => ({ n: "not a number" }) } };`;
    const result = await runInSandbox(request(code, {}));
    expect(result).toMatchObject({
      status: 'failure',
      error: { code: 'script_invalid_output', payload: [expect.objectContaining({ path: ['n'] })] },
    });
  });

  it(
    'fires abortSignal at the wall clock and lets the script wind down before ending it',
    async () => {
      const result = await runInSandbox(
        request(
          action(`
          await new Promise((resolve) => nango.abortSignal.addEventListener('abort', resolve));
          await nango.log('aborted: ' + nango.abortSignal.aborted);
          await new Promise(() => {});`),
          {},
          {
            limits: { ...request('', {}).limits, wallTimeMs: 200, abortGraceMs: 300 },
          },
        ),
      );
      expect(result).toMatchObject({ status: 'failure', error: { code: 'script_timeout' } });
      expect(result.logs.map((l) => l.message)).toEqual(['aborted: true']);
      expect(result.durationMs).toBeGreaterThanOrEqual(450);
      // Ended (a script that never settles would run on), however busy the machine.
      expect(result.durationMs).toBeLessThan(500 + BUSY_MACHINE_LATE_MS);
    },
    CPU_TEST_TIMEOUT_MS,
  );

  it(
    'ends a script that ignores its abortSignal and keeps the CPU busy in the grace',
    async () => {
      const result = await runInSandbox(
        request(
          action('await new Promise((r) => setTimeout(r, 150)); for (;;) {}'),
          {},
          {
            // A CPU limit out of reach: only the end of the grace can stop the loop.
            limits: { ...request('', {}).limits, cpuTimeMs: 600_000, wallTimeMs: 300, abortGraceMs: 200 },
          },
        ),
      );
      expect(result).toMatchObject({ status: 'failure', error: { code: 'script_timeout' } });
      expect(result.durationMs).toBeLessThan(500 + BUSY_MACHINE_LATE_MS);
    },
    CPU_TEST_TIMEOUT_MS,
  );

  it("stops keeping log lines once the run's log text is over its total", async () => {
    const result = await runInSandbox(
      request(
        action('for (let i = 0; i < 3; i++) console.log("y".repeat(60)); return 1;'),
        {},
        {
          limits: { ...request('', {}).limits, logTotalChars: 130 },
        },
      ),
    );
    expect(result.logs).toHaveLength(2);
    expect(result.logsDropped).toBe(1);
  });

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

  describe('with spare isolates made ahead of need', () => {
    beforeAll(() => configureSpares(2, 32));
    afterAll(() => configureSpares(0, 32));
    /** Until the spares are made: the next run takes one. */
    const settle = sandboxSettled;

    it('gives every run an isolate nothing else ran in: a global one run leaves is not there for the next', async () => {
      await settle();
      const writer = await runInSandbox(
        request(
          action('globalThis.leaked = "secret-of-env-1"; Object.prototype.polluted = 1; return 1;'),
          undefined,
        ),
      );
      expect(writer.status).toBe('success');
      await settle();
      const reader = await runInSandbox(
        request(
          action('return { leaked: typeof globalThis.leaked, polluted: ({}).polluted ?? null };'),
          undefined,
        ),
      );
      expect(reader).toMatchObject({
        status: 'success',
        outputJson: '{"leaked":"undefined","polluted":null}',
      });
    });

    it('charges a run only its own CPU time, not the library the spare evaluated before it', async () => {
      await settle();
      const quick = await runInSandbox(request(action('return 1;'), undefined));
      expect(quick.status).toBe('success');
      // The library takes about as long as a new isolate (tens of ms): a generous bound still tells.
      expect(quick.cpuTimeMs).toBeLessThan(BUSY_MACHINE_QUICK_RUN_MS);
      const loop = await runInSandbox(request(action('for (;;) {}'), undefined));
      expect(loop).toMatchObject({ status: 'failure', error: { code: 'script_cpu_limit' } });
    });
  });

  describe('pooled isolates', () => {
    beforeAll(() => configurePool(4));
    afterAll(() => configurePool(0));

    // One script both writes and reads, so both runs are of the same function version (one pool key).
    const probe = action(`
      const seen = {
        leaked: typeof globalThis.leaked,
        polluted: ({}).polluted ?? null,
        arrayMap: Array.prototype.map.name,
        mathMarker: typeof Math.leaked,
        moduleState: typeof module.exports.default.counter,
      };
      globalThis.leaked = 'secret of an earlier run';
      Object.prototype.polluted = 1;
      Array.prototype.map = function hijacked() { return []; };
      Math.leaked = 'secret';
      module.exports.default.counter = 1;
      return seen;`);
    const clean =
      '{"leaked":"undefined","polluted":null,"arrayMap":"map","mathMarker":"undefined","moduleState":"undefined"}';

    it("gives a later run of the same function the isolate, but never an earlier run's globals", async () => {
      const key = 'env-1\u0000fn-1\u0000sha-a';
      const first = await runInSandbox(request(probe, undefined, { poolKey: key }));
      expect(first).toMatchObject({ status: 'success', reusedIsolate: false });
      await isolatesReturned();
      expect(pooledIsolates()).toBe(1);
      const second = await runInSandbox(request(probe, undefined, { poolKey: key }));
      // The same isolate served it (so the test means something), in a context of its own made ahead of it.
      expect(second).toMatchObject({
        status: 'success',
        reusedIsolate: true,
        readyContext: true,
        outputJson: clean,
      });
    });

    describe('ready contexts (made while the isolate waits for its next run)', () => {
      const seesConnection = action(
        'return { connectionId: nango.connectionId, activityLogId: nango.activityLogId };',
      );

      it('binds each run its own connection and ids', async () => {
        const key = 'env-5\u0000fn-5\u0000sha-e';
        const runs = [];
        for (const [connectionId, invocationId] of [
          ['conn-A', '00000000-0000-4000-8000-00000000000a'],
          ['conn-B', '00000000-0000-4000-8000-00000000000b'],
          ['conn-C', '00000000-0000-4000-8000-00000000000c'],
        ] as const) {
          runs.push(
            await runInSandbox(
              request(seesConnection, undefined, { poolKey: key, connectionId, invocationId }),
            ),
          );
        }
        expect(runs.map((r) => [r.status, r.reusedIsolate, r.readyContext])).toEqual([
          ['success', false, false],
          ['success', true, true],
          ['success', true, true],
        ]);
        expect(runs.map((r) => (r.status === 'success' ? JSON.parse(r.outputJson!) : r.error))).toEqual([
          { connectionId: 'conn-A', activityLogId: '00000000-0000-4000-8000-00000000000a' },
          { connectionId: 'conn-B', activityLogId: '00000000-0000-4000-8000-00000000000b' },
          { connectionId: 'conn-C', activityLogId: '00000000-0000-4000-8000-00000000000c' },
        ]);
      });

      it("runs the module top level once per context, ahead of the run, and it sees no run's data", async () => {
        const key = 'env-6\u0000fn-6\u0000sha-f';
        // The top level pollutes built-ins and spies on what is parsed after it (the run's bindings): it
        // must only ever see its own run's, and nothing of what an earlier context's top level did.
        const spy = `"use strict";
          globalThis.loads = (globalThis.loads || 0) + 1;
          Object.prototype.loadsSeen = (Object.prototype.loadsSeen || 0) + 1;
          const parse = JSON.parse;
          const parsed = [];
          JSON.parse = (text) => { parsed.push(String(text)); return parse(text); };
          const atLoad = typeof nango;
          module.exports = { default: { type: "action", exec: async (nango) => ({
            loads: globalThis.loads, proto: ({}).loadsSeen, atLoad,
            spied: parsed.filter((t) => t.includes('conn-')).map((t) => parse(t).connectionId),
          }) } };`;
        const outputs = [];
        for (const connectionId of ['conn-A', 'conn-B', 'conn-C']) {
          const result = await runInSandbox(request(spy, undefined, { poolKey: key, connectionId }));
          expect(result.status).toBe('success');
          outputs.push([
            result.readyContext,
            result.status === 'success' ? JSON.parse(result.outputJson!) : null,
          ]);
        }
        const own = (connectionId: string) => ({
          loads: 1,
          proto: 1,
          atLoad: 'undefined',
          spied: [connectionId],
        });
        expect(outputs).toEqual([
          // The first run's top level ran after its bindings (a new isolate): its spy saw nothing.
          [false, { ...own('conn-A'), spied: [] }],
          [true, own('conn-B')],
          [true, own('conn-C')],
        ]);
      });

      it('runs a top level that logs or sets timers after the run binds, as before, and keeps its logs', async () => {
        const key = 'env-7\u0000fn-7\u0000sha-g';
        const logsAtLoad = `"use strict";
          console.log("loading");
          module.exports = { default: { type: "action", exec: async (nango) => nango.connectionId } };`;
        const results = [];
        for (const connectionId of ['conn-A', 'conn-B', 'conn-C']) {
          results.push(await runInSandbox(request(logsAtLoad, undefined, { poolKey: key, connectionId })));
        }
        expect(
          results.map((r) => [r.status, r.reusedIsolate, r.status === 'success' && r.outputJson]),
        ).toEqual([
          ['success', false, '"conn-A"'],
          ['success', true, '"conn-B"'],
          ['success', true, '"conn-C"'],
        ]);
        for (const r of results) expect(r.logs.map((l) => l.message)).toEqual(['loading']);
        // Made ahead all the same, only without the top level (the runs evaluate it after binding).
        expect(results.map((r) => r.readyContext)).toEqual([false, true, true]);
      });

      it('starts a run over on a new context when the top level reached for the run after it loaded', async () => {
        const key = 'env-9\u0000fn-9\u0000sha-i';
        // Swallows the refusal, and reaches for the log only in a microtask: the context looks loaded, and
        // only binding tells.
        const late = `"use strict";
          Promise.resolve().then(() => { try { console.log("late"); } catch (e) {} });
          module.exports = { default: { type: "action", exec: async (nango) => nango.connectionId } };`;
        const results = [];
        for (const connectionId of ['conn-A', 'conn-B', 'conn-C']) {
          results.push(await runInSandbox(request(late, undefined, { poolKey: key, connectionId })));
        }
        expect(
          results.map((r) => [r.status === 'success' && r.outputJson, r.reusedIsolate, r.readyContext]),
        ).toEqual([
          ['"conn-A"', false, false],
          ['"conn-B"', true, false],
          ['"conn-C"', true, true],
        ]);
        for (const r of results) expect(r.logs.map((l) => l.message)).toEqual(['late']);
      });

      it(
        "charges a run its module top level's CPU, evaluated ahead or not",
        async () => {
          const key = 'env-10\u0000fn-10\u0000sha-j';
          // A top level far heavier than the rest of a run: both are timed by the isolate's clock, which a
          // loaded machine stretches alike, so their ratio holds where fixed bounds do not.
          const heavyTop = `"use strict";
          let x = 0; for (let i = 0; i < 3e7; i++) x += i;
          module.exports = { default: { type: "action", exec: async () => x > 0 } };`;
          const run = () =>
            runInSandbox(
              request(heavyTop, undefined, {
                poolKey: key,
                limits: { ...request('', undefined).limits, cpuTimeMs: 120_000, wallTimeMs: 120_000 },
              }),
            );
          // Made ahead however long the loaded machine takes (the default drops a top level over a second).
          configureReadyContexts(true, CPU_TEST_TIMEOUT_MS);
          try {
            const first = await run();
            await sandboxSettled();
            const second = await run();
            expect([first.readyContext, second.readyContext]).toEqual([false, true]);
            expect(second.cpuTimeMs).toBeGreaterThan(first.cpuTimeMs * 0.5);
          } finally {
            configureReadyContexts(true);
          }
        },
        CPU_TEST_TIMEOUT_MS,
      );

      it(
        'still ends a run on a ready context that breaks a limit, with its code',
        async () => {
          const key = 'env-8\u0000fn-8\u0000sha-h';
          const sometimes = action(`
          if (input.loop) for (;;) {}
          if (input.hang) await new Promise(() => setTimeout(() => undefined, 60000));
          if (input.grow) { const a = []; for (;;) a.push(new Array(1e5).fill(a.length)); }
          return 1;`);
          // Each run once the previous one's isolate is back with its ready context, however busy the machine.
          const run = async (input: unknown, limits: Partial<SandboxRequest['limits']> = {}) => {
            await sandboxSettled();
            return runInSandbox(
              request(sometimes, input, {
                poolKey: key,
                limits: { ...request('', 1).limits, wallTimeMs: 1500, ...limits },
              }),
            );
          };
          expect(await run({})).toMatchObject({ status: 'success', readyContext: false });
          expect(await run({ loop: true })).toMatchObject({
            status: 'failure',
            readyContext: true,
            error: { code: 'script_cpu_limit' },
          });
          await run({});
          expect(await run({ hang: true })).toMatchObject({
            status: 'failure',
            readyContext: true,
            error: { code: 'script_timeout' },
          });
          await run({});
          // Clocks out of reach: on a loaded machine only the heap limit can end it.
          expect(await run({ grow: true }, { cpuTimeMs: 600_000, wallTimeMs: 600_000 })).toMatchObject({
            status: 'failure',
            readyContext: true,
            error: { code: 'script_memory_limit' },
          });
          expect(await run({})).toMatchObject({ status: 'success', readyContext: false });
        },
        CPU_TEST_TIMEOUT_MS,
      );
    });

    it('never hands an isolate to another environment or function version', async () => {
      await runInSandbox(request(probe, undefined, { poolKey: 'env-1\u0000fn-2\u0000sha-b' }));
      const other = await runInSandbox(request(probe, undefined, { poolKey: 'env-2\u0000fn-2\u0000sha-b' }));
      expect(other).toMatchObject({ status: 'success', reusedIsolate: false, outputJson: clean });
    });

    it('does not reuse an isolate whose run broke a limit or left host work pending', async () => {
      const key = 'env-3\u0000fn-3\u0000sha-c';
      await isolatesReturned();
      const before = pooledIsolates();
      const looping = await runInSandbox(request(action('for (;;) {}'), undefined, { poolKey: key }));
      expect(looping).toMatchObject({ status: 'failure', error: { code: 'script_cpu_limit' } });
      const timer = await runInSandbox(
        request(action('setTimeout(() => undefined, 60000); return 1;'), undefined, { poolKey: key }),
      );
      expect(timer.status).toBe('success');
      await isolatesReturned();
      expect(pooledIsolates()).toBe(before);
      const next = await runInSandbox(request(probe, undefined, { poolKey: key }));
      expect(next).toMatchObject({ status: 'success', reusedIsolate: false });
    });

    it(
      'charges each run on a reused isolate only its own CPU time',
      async () => {
        const key = 'env-4\u0000fn-4\u0000sha-d';
        // One bundle (a pool key is one function version), busy or quick by its input. The busy run is far
        // busier than the quick one: both are timed by the isolate's clock, which a loaded machine stretches
        // alike, so their ratio holds where a fixed bound does not.
        const sometimes = action(
          'if (input.busy) { let x = 0; for (let i = 0; i < 1e8; i++) x += i; } return 1;',
        );
        const limits = { ...request('', undefined).limits, cpuTimeMs: 120_000, wallTimeMs: 120_000 };
        const run = (busy: boolean) => runInSandbox(request(sometimes, { busy }, { poolKey: key, limits }));
        const heavy = await run(true);
        expect(heavy.status).toBe('success');
        await sandboxSettled();
        const quick = await run(false);
        expect(quick).toMatchObject({ status: 'success', reusedIsolate: true });
        expect(quick.cpuTimeMs).toBeLessThan(heavy.cpuTimeMs / 2);
      },
      CPU_TEST_TIMEOUT_MS,
    );

    it('disposes of its idle isolates when the module stops, and serves runs again once configured', async () => {
      const key = 'env-5\u0000fn-5\u0000sha-e';
      await runInSandbox(request(probe, undefined, { poolKey: key }));
      await isolatesReturned();
      expect(pooledIsolates()).toBeGreaterThan(0);
      disposeSandbox();
      expect(pooledIsolates()).toBe(0);
      const after = await runInSandbox(request(probe, undefined, { poolKey: key }));
      expect(after).toMatchObject({ status: 'success', reusedIsolate: false, outputJson: clean });
      await isolatesReturned();
      // A pool that was disposed of keeps nothing until it is configured again.
      expect(pooledIsolates()).toBe(0);
      configurePool(4);
    });
  });
});
