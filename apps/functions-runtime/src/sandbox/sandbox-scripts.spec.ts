import { actionScript as action } from './sandbox-request.fixture';
import { runInSandbox } from './sandbox';
import { BUSY_MACHINE_LATE_MS, CPU_TEST_TIMEOUT_MS, fixture, hostCalls, request } from './sandbox.fixture';

/**
 * The sandbox alone (no NATS, no host services) running real bundles from the nango CLI and hand-written
 * ones: the globals and modules a script gets, the bundle shapes it may take, and the limits on its logs,
 * output and wall clock. Needs `dist/sandbox-lib.js` (the app's build).
 */

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
});
