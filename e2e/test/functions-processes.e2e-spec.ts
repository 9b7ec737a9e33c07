import type { Nango } from '@nangohq/node';
import { startStack, type Stack } from '@switchboard/testing';
import { ITEM_NAMES, type ItemsProvider } from './support/functions-fakes';
import { API_KEY, FunctionsSuite } from './support/functions-suite';
import { expectError } from './support/http';
import {
  START_HOOK_TIMEOUT_MS,
  STACK_READY_TIMEOUT_MS,
  waitFor,
  waitUntilPolling,
} from './support/processes';
import { writeProxyProvidersFile } from './support/proxy-fakes';

jest.setTimeout(180_000);

// The deployed functions while the stack's processes come and go: a second orchestrator replica, a runtime
// replica or a worker killed under a run, the orchestrator down under an import or an integration's deletion.
// These stop, kill and add processes, so this file has a stack of its own.
describe('functions: deploy with the nango CLI, the functions API and actions', () => {
  const suite = new FunctionsSuite();
  const { api, importKey, listedIds, trigger } = suite;
  let stack: Stack;
  let provider: ItemsProvider;
  let nango: Nango;

  beforeAll(async () => {
    await suite.start(() =>
      startStack({
        env: { SWITCHBOARD_PROVIDERS_FILE: writeProxyProvidersFile() },
        serviceEnv: {
          gateway: { SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1' },
          proxy: { SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1' },
          'functions-runtime': { SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1' },
          // A runtime replica lost under an action is given up on after 6 s without its confirmation.
          'sync-orchestrator': { SWITCHBOARD_ACTION_HEARTBEAT_TIMEOUT_MS: '6000' },
          'webhook-relay': { SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1' },
        },
        readyTimeoutMs: STACK_READY_TIMEOUT_MS,
      }),
    );
    ({ stack, provider, nango } = suite);
    await suite.deploy();
  }, 2 * START_HOOK_TIMEOUT_MS);

  afterAll(() => suite.stop());

  describe('two orchestrator replicas', () => {
    it("answers a run's logs right after its action, whichever replica the logs request reaches", async () => {
      // The action is answered before its run row is written; the logs request may reach the other replica.
      const second = await stack.startReplica('sync-orchestrator');
      try {
        for (let i = 0; i < 20; i++) {
          const res = await trigger('summarize-items', { owner: `acme-${i}`, pageSize: 5 });
          expect(res.status).toBe(200);
          const runId = res.headers.get('x-switchboard-run-id');
          const logs = await api('GET', `/functions/runs/${runId}/logs`);
          expect({ status: logs.status, body: logs.body }).toMatchObject({
            status: 200,
            body: {
              data: {
                id: runId,
                status: 'succeeded',
                logs: expect.arrayContaining([
                  expect.objectContaining({ message: expect.stringContaining(`read 5 items for acme-${i}`) }),
                ]),
              },
            },
          });
        }
      } finally {
        // The tests after this one run against one replica again.
        await new Promise((resolve) => {
          second.process.once('exit', resolve);
          second.process.kill('SIGTERM');
        });
      }
    });
  });

  describe('a functions-runtime replica killed mid-run', () => {
    it('ends its actions within the lease: an async one retried on the other replica, the others failed with function_runtime_lost', async () => {
      const hold = provider.holdAccount();
      const summarize = (owner: string, headers: Record<string, string> = {}) =>
        trigger('summarize-items', { owner, pageSize: 5 }, headers);
      const synchronous = summarize('sync-killed');
      const retried = await summarize('async-retried', { 'x-async': 'true', 'x-max-retries': '1' });
      const once = await summarize('async-once', { 'x-async': 'true', 'x-max-retries': '0' });
      expect([retried.status, once.status]).toEqual([202, 202]);
      const retriedId = (retried.body as { id: string }).id;
      const onceId = (once.body as { id: string }).id;
      // The three scripts wait on the provider, on the one runtime replica there is; a second one starts.
      await waitFor('the three scripts to call the provider', async () =>
        hold.held >= 3 ? true : undefined,
      );
      const doomed = stack.replicas['functions-runtime'][0]!;
      await stack.startReplica('functions-runtime');
      const exited = new Promise((resolve) => doomed.process.once('exit', resolve));
      doomed.process.kill('SIGKILL');
      await exited;
      const killedAt = Date.now();
      hold.release();

      const ended = (id: string) =>
        waitFor(
          `the async action ${id} to end`,
          async () => {
            const res = await api('GET', `/action/${id}`);
            return res.status === 404 ? undefined : { res, at: Date.now() };
          },
          90_000,
          250,
        );
      const [sync, retriedEnd, onceEnd] = await Promise.all([
        synchronous.then((res) => ({ res, at: Date.now() })),
        ended(retriedId),
        ended(onceId),
      ]);
      // Given up on within the lease (6 s) and a few renewals, not the action's 15 min time limit.
      expect(sync.at - killedAt).toBeLessThan(20_000);
      expect(onceEnd.at - killedAt).toBeLessThan(20_000);
      expect(retriedEnd.at - killedAt).toBeLessThan(40_000);

      // The synchronous action: a clear 503 the caller may retry, not a hang.
      expect(sync.res.status).toBe(503);
      expect(sync.res.headers.get('retry-after')).toBeTruthy();
      expect(sync.res.body).toMatchObject({
        error: { code: 'function_runtime_lost', message: expect.stringContaining('functions-runtime') },
      });
      // X-Max-Retries: 1: the second attempt ran on the surviving replica and its output is the answer.
      expect(retriedEnd.res.status).toBe(200);
      expect(retriedEnd.res.body).toMatchObject({ account: 'acme', count: 5, names: ITEM_NAMES });
      expect((await api('GET', `/functions/runs/${retriedId}/logs`)).body).toMatchObject({
        data: { status: 'succeeded', attempts: 2 },
      });
      // X-Max-Retries: 0: failed with the coded error naming the run, and that answer is final.
      expect(onceEnd.res.status).toBe(503);
      expect(onceEnd.res.body).toMatchObject({
        error: { code: 'function_runtime_lost', payload: { run_id: onceId } },
      });
      expect((await api('GET', `/functions/runs/${onceId}/logs`)).body).toMatchObject({
        data: { status: 'failed', attempts: 1 },
      });
      const again = await api('GET', `/action/${onceId}`);
      expect({ status: again.status, body: again.body }).toEqual({
        status: onceEnd.res.status,
        body: onceEnd.res.body,
      });
    });

    it('an async action whose worker is SIGKILLed is run again by another worker once the first script is stopped', async () => {
      const hold = provider.holdAccount();
      try {
        const accepted = await trigger(
          'summarize-items',
          { owner: 'worker-killed', pageSize: 5 },
          { 'x-async': 'true', 'x-max-retries': '0' },
        );
        expect(accepted.status).toBe(202);
        const { id } = accepted.body as { id: string };
        await waitFor('the script to call the provider', async () => (hold.held >= 1 ? true : undefined));
        const doomed = stack.workers[0]!;
        // The other worker polls before the kill: its boot (seconds on a loaded host) is no part of the
        // retry's time.
        await waitUntilPolling(stack.startWorker());
        const exited = new Promise((resolve) => doomed.process.once('exit', resolve));
        doomed.process.kill('SIGKILL');
        await exited;
        const killedAt = Date.now();
        // The dead worker renews nothing: its script is stopped (lease or cancel) before the retry calls out.
        await waitFor(
          'the first script to be stopped',
          async () =>
            new RegExp(`stopping ${id} \\(attempt 1\\)`).test(stack.logs('functions-runtime'))
              ? true
              : undefined,
          30_000,
          200,
        );
        await waitFor(
          'the retried script to call the provider',
          async () => (hold.held >= 2 ? true : undefined),
          30_000,
        );
        hold.release();
        const ended = await waitFor(
          'the async action to end',
          async () => {
            const res = await api('GET', `/action/${id}`);
            return res.status === 404 ? undefined : res;
          },
          30_000,
          250,
        );
        expect(Date.now() - killedAt).toBeLessThan(40_000);
        expect({ status: ended.status, body: ended.body }).toMatchObject({
          status: 200,
          body: { account: 'acme', count: 5, names: ITEM_NAMES },
        });
        // One attempt of the action (X-Max-Retries 0): the worker's death is not the script's failure.
        expect((await api('GET', `/functions/runs/${id}/logs`)).body).toMatchObject({
          data: { status: 'succeeded', attempts: 1 },
        });
      } finally {
        hold.release();
      }
    });
  });

  describe('on-event scripts', () => {
    describe('POST /connections (import)', () => {
      it('refuses an import while no verdict can be had (orchestrator down), storing nothing', async () => {
        await stack.stopService('sync-orchestrator');
        try {
          const refused = await importKey('imported-unchecked', API_KEY);
          expectError(refused, 503, 'service_unavailable');
          expect(await listedIds('imported-unchecked')).toEqual([]);
        } finally {
          await stack.startReplica('sync-orchestrator');
        }
        // Once it is back, the same import goes through.
        expect((await importKey('imported-unchecked', API_KEY)).status).toBe(201);
      });
    });
  });

  describe('integration deletion', () => {
    it("deletes the integration's functions, even when the orchestrator was down at the time", async () => {
      expect((await nango.listFunctions({ uniqueKey: 'fakehub' })).pagination.total).toBeGreaterThan(0);
      // The orchestrator is down while the integration goes: the deletion must wait for it, not be lost.
      await stack.stopService('sync-orchestrator');
      expect((await api('DELETE', '/integrations/fakehub')).status).toBe(200);
      await stack.startReplica('sync-orchestrator');
      // A new integration with the same key starts with no functions of the old one.
      expect(
        (await api('POST', '/integrations', { provider: 'fake-api-key', unique_key: 'fakehub' })).status,
      ).toBe(200);
      const started = Date.now();
      for (;;) {
        const listed = await api('GET', '/integrations/fakehub/functions');
        if (
          listed.status === 200 &&
          (listed.body as { pagination: { total: number } }).pagination.total === 0
        )
          break;
        if (Date.now() - started > 60_000) throw new Error(`functions left behind: ${listed.text}`);
        await new Promise((r) => setTimeout(r, 250));
      }
      const config = await api('GET', '/scripts/config');
      expect(config.body).toEqual([]);
    });
  });
});
