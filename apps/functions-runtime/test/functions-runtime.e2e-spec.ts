import { randomUUID } from 'node:crypto';
import {
  FUNCTION_OUTPUT_BUCKET,
  FUNCTIONS_SUBJECTS,
  functionRunResultSchema,
  MAX_ACTION_TRIGGER_DEPTH,
} from '@switchboard/contracts';
import type { Stack } from '@switchboard/testing';
import type { NatsConnection } from 'nats';
import { ESCAPE_ATTEMPTS } from './support/escape-attempts';
import { ITEM_IDS, type FakePagesProvider } from './support/fake-pages-provider';
import {
  actionBundle,
  CPU_LIMIT_MS,
  fixture,
  INLINE_OUTPUT_BYTES,
  RuntimeWorld,
} from './support/runtime-world';

/**
 * functions-runtime as the orchestrator uses it: `functions.v1.run` over real NATS, with the real
 * vault, auth-connect and proxy service behind the script's `nango` calls, and a provider faked by an
 * HTTP server on loopback. Bundles are the nango CLI's own output (test/fixtures, compiled from
 * test/fixtures/nango-project) or hand-written CommonJS in the same shape for the escape attempts.
 */

describe('functions-runtime: functions.v1.run', () => {
  const world = new RuntimeWorld();
  const { gateway, run, runForever, expectStillServing } = world;
  let stack: Stack;
  let fake: FakePagesProvider;
  let nc: NatsConnection;

  beforeAll(async () => {
    await world.start();
    ({ stack, fake, nc } = world);
  }, 180_000);

  afterAll(() => world.stop(), 60_000);

  describe('real bundles compiled by the nango CLI', () => {
    it('runs an action and returns its computed output with its logs', async () => {
      const result = await run(fixture('sum-numbers'), { numbers: [1, 2, 3, 10], label: 'sum' });
      expect(result).toMatchObject({ status: 'success', output: { label: 'SUM', total: 16, mean: 4 } });
      expect(result.logs.map((l) => [l.level, l.message])).toEqual([
        ['info', 'summing 4 numbers'],
        ['warn', 'total computed'],
      ]);
    });

    it('refuses input that does not match the zod input schema, before the script runs', async () => {
      const result = await run(fixture('create-issue.sourcemap'), { repo: 'a/b' });
      expect(result.status).toBe('failure');
      if (result.status !== 'failure') return;
      expect(result.error.code).toBe('script_invalid_input');
      expect(result.error.payload).toEqual([expect.objectContaining({ path: ['title'] })]);
      // Nothing reached the provider.
      expect(fake.seen.some((r) => r.url.includes('/issues'))).toBe(false);
    });

    it("returns an ActionError's payload as the caller's error", async () => {
      const result = await run(fixture('fail-action'), { reason: 'quota' });
      expect(result).toMatchObject({
        status: 'failure',
        error: {
          code: 'action_script_runtime_error',
          payload: { message: 'failed: quota', code: 'always_fails', details: { reason: 'quota' } },
        },
      });
    });

    it.each(['cursor', 'link', 'offset', 'provider-default'])(
      'proxies a GET and reads every page (%s pagination) with the credentials injected',
      async (style) => {
        const before = fake.seen.length;
        const result = await run(fixture('list-items'), { style });
        expect(result).toMatchObject({
          status: 'success',
          output: { ids: ITEM_IDS, pages: 3, firstStatus: 200 },
        });
        const calls = fake.seen.slice(before);
        expect(calls.map((c) => c.url.split('?')[0])).toEqual([
          '/me',
          ...Array(3).fill(style === 'provider-default' ? '/cursor/items' : `/${style}/items`),
        ]);
        for (const c of calls) expect(c.headers.authorization).toBe('Bearer at-conn-a');
      },
    );

    it("reads and writes its own connection's metadata, token, webhook URL and environment variables", async () => {
      const result = await run(fixture('whoami'), { tag: 'blue' });
      expect(result).toMatchObject({
        status: 'success',
        output: {
          connectionId: 'conn-a',
          metadata: { owner: 'conn-a', tag: 'blue' },
          token: 'at-conn-a',
          webhookUrl: expect.stringMatching(new RegExp(`/webhook/${stack.environmentUuid}/fake-pages$`)),
          variables: [{ name: 'REGION', value: 'eu-1' }],
        },
      });
    });

    it('runs an on-event script that sets the metadata of its connection', async () => {
      const result = await run(fixture('onboard'), undefined, { type: 'on-event' });
      expect(result).toMatchObject({
        status: 'success',
        logs: [expect.objectContaining({ message: 'onboarded' })],
      });
      const connection = await gateway('GET', '/connections/conn-a?provider_config_key=fake-pages');
      expect(connection.body?.metadata).toEqual({ onboarded: true, by: 'conn-a' });
    });

    it('puts an output too large for a NATS message in the object store', async () => {
      const big = 'x'.repeat(INLINE_OUTPUT_BYTES * 3);
      const result = await run(actionBundle(`return { big: "x".repeat(${big.length}) };`), {});
      expect(result.status).toBe('success');
      if (result.status !== 'success') return;
      expect(result.output).toBeUndefined();
      expect(result.outputRef).toMatchObject({ bucket: FUNCTION_OUTPUT_BUCKET });
      const store = await nc.jetstream().views.os(FUNCTION_OUTPUT_BUCKET);
      const blob = await store.getBlob(result.outputRef!.name);
      expect(JSON.parse(Buffer.from(blob!).toString('utf8'))).toEqual({ big });
      expect(result.outputRef!.bytes).toBe(blob!.length);
    });

    it('throws a provider error answer as an axios-like error carrying the response', async () => {
      const caught = await run(
        actionBundle(`try { await nango.get({ endpoint: '/missing' }); return 'no error'; }
          catch (e) { return { status: e.response.status, data: e.response.data, message: e.message }; }`),
        {},
      );
      expect(caught).toMatchObject({
        status: 'success',
        output: {
          status: 404,
          data: { message: 'not found' },
          message: 'Request failed with status code 404',
        },
      });
      const uncaught = await run(actionBundle("await nango.get({ endpoint: '/missing' });"), {});
      expect(uncaught).toMatchObject({
        status: 'failure',
        error: { code: 'script_runtime_error', message: 'AxiosError: Request failed with status code 404' },
      });
    });

    it('refuses an ActionError payload too large for the reply', async () => {
      const result = await run(
        actionBundle(`throw new nango.ActionError({ blob: 'b'.repeat(${INLINE_OUTPUT_BYTES * 2}) });`),
        {},
      );
      expect(result).toMatchObject({ status: 'failure', error: { code: 'script_output_too_large' } });
    });

    it('caps the log lines it keeps and counts the rest', async () => {
      const result = await run(
        actionBundle('for (let i = 0; i < 12; i++) console.log("line", i); return 1;'),
        {},
      );
      expect(result.logs).toHaveLength(5);
      expect(result.logsDropped).toBe(7);
    });
  });

  describe('sandbox escape table: each attempt is refused with its code, and the service goes on', () => {
    it.each(ESCAPE_ATTEMPTS)('$attempt → $code', async ({ body, limits, code, message, cause }) => {
      const result = await run(actionBundle(body), {}, limits ? { limits } : {});
      expect(result.status).toBe('failure');
      if (result.status !== 'failure') return;
      expect(result.error.code).toBe(code);
      if (message) expect(result.error.message).toMatch(message);
      if (cause) expect(result.error.cause).toEqual({ code: cause });
      await expectStillServing();
    });

    it('an action chain triggering actions past the depth limit is refused before reaching the orchestrator', async () => {
      const result = await run(
        actionBundle('return await nango.triggerAction("fake-pages", "conn-a", "under-test", {});'),
        {},
        { depth: MAX_ACTION_TRIGGER_DEPTH },
      );
      expect(result).toMatchObject({
        status: 'failure',
        error: { code: 'script_forbidden_call', message: expect.stringMatching(/at most 5 deep/) },
      });
      await expectStillServing();
    });

    it('a bundle that breaks out of its CommonJS wrapper cannot replace the sandbox entry point', async () => {
      const code = [
        'module.exports = { default: { type: "action", exec: async () => "first" } };',
        '};',
        'globalThis.__start = async () => JSON.stringify({ status: "success", output: "forged" });',
        'globalThis.__factory = function (module) {',
        '  module.exports = { default: { type: "action", exec: async () => "real" } };',
      ].join('\n');
      const result = await run(code, {});
      expect(result).toMatchObject({ status: 'success', output: 'real' });
    });

    it('a script that rewrites nango.connectionId still reaches only its own connection', async () => {
      const result = await run(
        actionBundle(
          'nango.connectionId = "conn-b"; const c = await nango.getConnection(); return { id: c.connection_id, token: await nango.getToken() };',
        ),
        {},
      );
      expect(result).toMatchObject({ status: 'success', output: { id: 'conn-a', token: 'at-conn-a' } });
      const other = await gateway('GET', '/connections/conn-b?provider_config_key=fake-pages');
      expect(other.body?.metadata).toEqual({ owner: 'conn-b' });
    });
  });

  it('gives a sync run its own CPU limit: a loop an action may not finish, a sync does', async () => {
    // 4 s of a busy loop: over the actions' 1.5 s of CPU, under the syncs' 6 s.
    const burn = (type: 'action' | 'sync') => `"use strict";
      module.exports = { default: { type: "${type}", exec: async () => {
        const until = Date.now() + 4000; let n = 0;
        while (Date.now() < until) n++;
        return n > 0;
      } } };`;
    expect(await run(burn('action'), {})).toMatchObject({
      status: 'failure',
      error: { code: 'script_cpu_limit' },
    });
    const sync = await run(burn('sync'), undefined, { type: 'sync' });
    expect(sync).toMatchObject({ status: 'success', output: true });
    expect(sync.cpuTimeMs).toBeGreaterThan(CPU_LIMIT_MS);
  }, 30_000);

  it("getToken answers as Nango's client: the access token for OAuth 2, the whole credentials otherwise", async () => {
    const connections = [
      { provider: 'fake-keys', credentials: { type: 'API_KEY', apiKey: 'key-of-conn-k' } },
      { provider: 'fake-basic', credentials: { type: 'BASIC', username: 'ada', password: 'pw-of-conn-b' } },
    ];
    const tokens: unknown[] = [];
    for (const { provider, credentials } of connections) {
      expect((await gateway('POST', '/integrations', { provider, unique_key: provider })).status).toBe(200);
      const imported = await gateway('POST', '/connections', {
        provider_config_key: provider,
        connection_id: 'conn-token',
        credentials,
      });
      expect([200, 201]).toContain(imported.status);
      const result = await run(
        actionBundle('return await nango.getToken();'),
        {},
        {
          connection: { connectionId: 'conn-token', providerConfigKey: provider, provider },
        },
      );
      expect(result.status).toBe('success');
      tokens.push(result.status === 'success' ? result.output : undefined);
    }
    expect(tokens).toEqual([
      expect.objectContaining({ type: 'API_KEY', apiKey: 'key-of-conn-k' }),
      expect.objectContaining({ type: 'BASIC', username: 'ada', password: 'pw-of-conn-b' }),
    ]);
  });

  it('a host call sent as an object instead of JSON text is refused unless the call takes data (records writes only)', async () => {
    // A patched JSON.stringify makes the prelude send the object itself: the copy arrives, and the
    // dispatcher refuses it for a call that takes JSON text, before any connection is read.
    const result = await run(
      actionBundle(`
        const stringify = JSON.stringify;
        JSON.stringify = () => ({ providerConfigKey: "fake-pages", connectionId: "conn-a" });
        let answer;
        try { answer = await nango.getConnection(); } catch (e) { answer = e.code + ": " + e.message; }
        finally { JSON.stringify = stringify; }
        return answer;`),
      {},
    );
    expect(result).toMatchObject({
      status: 'success',
      output: 'invalid_arguments: nango.getConnection takes its arguments as JSON text',
    });
  });

  it('a leased run goes on while functions.v1.lease renews its attempt, and stops when the renewals stop', async () => {
    const invocationId = randomUUID();
    const run = runForever(invocationId, 3, { lease: { ttlMs: 1500 } });
    // Renewed every 500 ms for 4 s (well past the 1.5 s lease): still running, and each renewal sent as a
    // request is answered by the replica running it. Renewals of another attempt and of another
    // invocation, sent after, do not keep it, and nobody answers them.
    for (let i = 0; i < 8; i++) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      const confirmed = await nc.request(
        FUNCTIONS_SUBJECTS.lease,
        JSON.stringify({ invocationId, attempt: 3 }),
        {
          timeout: 1_000,
        },
      );
      expect(confirmed.json()).toEqual({ invocationId, attempt: 3, running: true });
    }
    expect(run.settled).toBe(false);
    await expect(
      nc.request(FUNCTIONS_SUBJECTS.lease, JSON.stringify({ invocationId, attempt: 2 }), { timeout: 300 }),
    ).rejects.toMatchObject({ code: 'TIMEOUT' });
    nc.publish(FUNCTIONS_SUBJECTS.lease, JSON.stringify({ invocationId, attempt: 3 }));
    const lastRenewal = Date.now();
    const others = setInterval(() => {
      nc.publish(FUNCTIONS_SUBJECTS.lease, JSON.stringify({ invocationId, attempt: 2 }));
      nc.publish(FUNCTIONS_SUBJECTS.lease, JSON.stringify({ invocationId: randomUUID(), attempt: 3 }));
    }, 300);
    try {
      const result = functionRunResultSchema.parse(await run.answer);
      const stoppedAfter = Date.now() - lastRenewal;
      expect(stoppedAfter).toBeGreaterThanOrEqual(1400);
      expect(stoppedAfter).toBeLessThan(6_000);
      expect(result).toMatchObject({
        status: 'failure',
        error: { code: 'script_aborted', message: expect.stringContaining('lease') },
      });
      expect(result.logs.map((l) => l.message)).toEqual([expect.stringContaining('abort: ')]);
    } finally {
      clearInterval(others);
    }
    await expectStillServing();
  }, 30_000);

  it('functions.v1.cancel stops the attempt it names as the wall clock would, and leaves the others alone', async () => {
    const invocationId = randomUUID();
    const started = Date.now();
    const run = runForever(invocationId, 2);
    // A cancel of another attempt (this one is a retry) and of another invocation change nothing.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    nc.publish(
      FUNCTIONS_SUBJECTS.cancel,
      JSON.stringify({ invocationId, attempt: 1, reason: 'old attempt' }),
    );
    nc.publish(
      FUNCTIONS_SUBJECTS.cancel,
      JSON.stringify({ invocationId: randomUUID(), attempt: 2, reason: 'another run' }),
    );
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(run.settled).toBe(false);

    nc.publish(FUNCTIONS_SUBJECTS.cancel, JSON.stringify({ invocationId, attempt: 2, reason: 'resync' }));
    const result = functionRunResultSchema.parse(await run.answer);
    // Well before the action's 20 s wall clock.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(result).toMatchObject({
      status: 'failure',
      error: { code: 'script_aborted', message: expect.stringContaining('resync') },
    });
    expect(result.logs.map((l) => l.message)).toEqual([expect.stringContaining('abort: ')]);
    await expectStillServing();
  });
});
