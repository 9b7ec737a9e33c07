import { actionScript as action } from './sandbox-request.fixture';
import {
  configurePool,
  configureReadyContexts,
  configureSpares,
  disposeSandbox,
  isolatesReturned,
  pooledIsolates,
  runInSandbox,
  sandboxSettled,
  type SandboxRequest,
} from './sandbox';
import { BUSY_MACHINE_QUICK_RUN_MS, CPU_TEST_TIMEOUT_MS, request } from './sandbox.fixture';

/**
 * Which isolate and context serve a run: spares made ahead of need, isolates pooled between runs of one
 * function version and the ready contexts made while they wait, and what none of them may carry over
 * from one run to the next. Needs `dist/sandbox-lib.js` (the app's build).
 */

describe('runInSandbox', () => {
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
