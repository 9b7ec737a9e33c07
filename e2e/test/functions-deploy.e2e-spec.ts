import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Nango } from '@nangohq/node';
import { repoRoot, type Stack } from '@switchboard/testing';
import { type Client, ScheduleNotFoundError } from '@temporalio/client';
import { ITEM_NAMES } from './support/functions-fakes';
import { CONNECTION, FunctionsSuite, type Listed } from './support/functions-suite';
import { call, createKey, expectError, failure } from './support/http';
import { nangoCli, nangoDeploy, prepareProject } from './support/nango-cli';
import { START_HOOK_TIMEOUT_MS, waitFor } from './support/processes';
import { standardStack } from './support/standard-stack';

jest.setTimeout(180_000);

/** The fixture project's functions as the functions API lists them (`type:name`, sorted). */
const PROJECT_FUNCTIONS = [
  'action:refuse',
  'action:relay-summary',
  'action:slow-echo',
  'action:summarize-items',
  'on-event:check-account',
  'on-event:farewell',
  'on-event:mark-onboarded',
  'sync:items',
];

// Deploying the fixture project and reading it back through the functions API, then changing it: a redeploy
// that removes functions, a legacy project, and our own CLI. On the standard stack, in an account of its own.
describe('functions: deploy with the nango CLI, the functions API and actions', () => {
  const suite = new FunctionsSuite();
  const { api } = suite;
  let stack: Stack;
  let nango: Nango;
  let project: string;
  let temporal: Client;

  beforeAll(async () => {
    await suite.start(() => standardStack());
    ({ stack, nango, project, temporal } = suite);
  }, 2 * START_HOOK_TIMEOUT_MS);

  afterAll(() => suite.stop());

  /** Listed functions as `type:name`, sorted. */
  const typedNames = (listed: { data: { type: string; name: string }[] }) =>
    listed.data.map((f) => `${f.type}:${f.name}`).sort();
  /** The integration's functions once the redeploy removed the `refuse` action and the `items` sync. */
  const expectRedeployedFunctions = async () =>
    expect(typedNames(await nango.listFunctions({ uniqueKey: 'fakehub' }))).toEqual(
      PROJECT_FUNCTIONS.filter((f) => f !== 'action:refuse' && f !== 'sync:items'),
    );

  describe('nango deploy', () => {
    it('deploys the fixture project with the official CLI 0.71.10 and prints every function with its version', async () => {
      const run = await nangoDeploy(project, stack.gatewayUrl, stack.secretKey);
      expect({ code: run.code, stdout: run.stdout }).toEqual({
        code: 0,
        stdout: expect.stringContaining('Successfully deployed the functions'),
      });
      expect(run.stdout).toContain('✓ Deployed');
      expect(run.stdout).toContain('- summarize-items@v1.0.0');
      // No version in the script: the server gives the first one.
      expect(run.stdout).toContain('- refuse@v0.0.1');
      expect(run.stdout).toContain('- items@v0.1.0');
      // On-event scripts are deployed functions too: the answer lists them, so the CLI prints them.
      for (const onEvent of ['mark-onboarded', 'farewell', 'check-account']) {
        expect(run.stdout).toContain(`- ${onEvent}@v0.0.1`);
      }
      // The plan the CLI printed came from our confirmation answer.
      expect(run.stdout).toMatch(/summarize-items/);
    });

    it('lists the deployed functions of the integration with filters and pages', async () => {
      const all = await nango.listFunctions({ uniqueKey: 'fakehub' });
      expect(all.pagination).toEqual({ total: 8, page: 0, limit: 20 });
      expect(typedNames(all)).toEqual(PROJECT_FUNCTIONS);
      const actions = await nango.listFunctions({ uniqueKey: 'fakehub' }, { type: 'action' });
      expect(actions.data.map((f) => f.name).sort()).toEqual([
        'refuse',
        'relay-summary',
        'slow-echo',
        'summarize-items',
      ]);
      const searched = await nango.listFunctions({ uniqueKey: 'fakehub' }, { search: 'IZE-IT' });
      expect(searched.data.map((f) => f.name)).toEqual(['summarize-items']);
      const page = await nango.listFunctions({ uniqueKey: 'fakehub' }, { page: 1, limit: 3 });
      expect(page.pagination).toEqual({ total: 8, page: 1, limit: 3 });
      expect(page.data).toHaveLength(3);
      expectError(await api('GET', '/integrations/fakehub/functions?limit=101'), 400, 'invalid_query_params');
      expectError(await api('GET', '/integrations/nope/functions'), 404, 'not_found');
    });

    it('describes an action, a sync and an on-event script in the shapes Nango answers', async () => {
      const action = (await nango.getFunction({ uniqueKey: 'fakehub', name: 'summarize-items' }))
        .data as unknown as Listed;
      expect(action).toMatchObject({
        type: 'action',
        name: 'summarize-items',
        description: expect.stringContaining('Reads the account'),
        scopes: ['items:read'],
        input: 'ActionInput_fakehub_summarizeitems',
        returns: ['ActionOutput_fakehub_summarizeitems'],
        enabled: true,
        source: 'repo',
      });
      expect(typeof action.id).toBe('number');
      expect(new Date(action.last_deployed as string).toISOString()).toBe(action.last_deployed);
      const schema = action.json_schema as { definitions: Record<string, { required?: string[] }> };
      expect(schema.definitions.ActionInput_fakehub_summarizeitems?.required).toEqual(['owner']);

      const sync = (await nango.getFunction({ uniqueKey: 'fakehub', name: 'items' }))
        .data as unknown as Listed;
      expect(sync).toMatchObject({
        type: 'sync',
        returns: ['FakehubItem'],
        runs: 'every hour',
        auto_start: false,
        track_deletes: false,
      });
      const onEvent = (await nango.getFunction({ uniqueKey: 'fakehub', name: 'mark-onboarded' }))
        .data as unknown as Listed;
      expect(onEvent).toMatchObject({ type: 'on-event', event: 'post-connection-creation' });
      expect(onEvent).not.toHaveProperty('returns');

      expect(await failure(nango.getFunction({ uniqueKey: 'fakehub', name: 'nothing' }))).toMatchObject({
        status: 404,
        data: { error: { code: 'not_found' } },
      });
    });

    it("gives a function's TypeScript source, and asks for a type when two functions share a name", async () => {
      const code = await nango.getFunctionCode({ uniqueKey: 'fakehub', name: 'summarize-items' });
      expect(code.type).toBe('action');
      expect(code.code).toContain('createAction(');
      expect(code.code).toContain('nango.paginate');

      // A second function named "items" (an action beside the sync), through the raw endpoint in single mode.
      const bundle = readFileSync(join(project, 'build', 'fakehub_actions_refuse.cjs'), 'utf8');
      const single = await api('POST', '/sync/deploy', {
        flowConfigs: [
          {
            syncName: 'items',
            providerConfigKey: 'fakehub',
            type: 'action',
            models: [],
            runs: null,
            fileBody: { js: bundle, ts: '// items action' },
          },
        ],
        deployMode: 'single',
        reconcile: true,
      });
      expect(single.status).toBe(200);
      expect(single.body).toEqual([
        expect.objectContaining({
          name: 'items',
          type: 'action',
          version: '0.0.1',
          providerConfigKey: 'fakehub',
        }),
      ]);
      // single mode never deletes: everything deployed before is still there.
      expect((await nango.listFunctions({ uniqueKey: 'fakehub' })).pagination.total).toBe(9);

      const ambiguous = await failure(nango.getFunctionCode({ uniqueKey: 'fakehub', name: 'items' }));
      expect(ambiguous.status).toBe(409);
      expect(ambiguous.data).toEqual({
        error: {
          code: 'ambiguous_function',
          message: expect.any(String),
          payload: {
            matches: expect.arrayContaining([
              { type: 'action', name: 'items' },
              { type: 'sync', name: 'items' },
            ]),
          },
        },
      });
      expect((await failure(nango.getFunction({ uniqueKey: 'fakehub', name: 'items' }))).status).toBe(409);
      expect(
        await nango.getFunctionCode({ uniqueKey: 'fakehub', name: 'items' }, { type: 'action' }),
      ).toEqual({
        type: 'action',
        code: '// items action',
      });

      expect(await nango.deleteFunction({ uniqueKey: 'fakehub', name: 'items' }, { type: 'action' })).toEqual(
        {
          data: { success: true },
        },
      );
      expect((await nango.getFunction({ uniqueKey: 'fakehub', name: 'items' })).data.type).toBe('sync');
      expectError(await api('DELETE', '/integrations/fakehub/functions/items'), 400, 'invalid_query_params');
    });

    it('answers the scripts config natively and as OpenAI tools', async () => {
      const config = (await nango.getScriptsConfig()) as unknown as {
        providerConfigKey: string;
        provider: string;
        syncs: Listed[];
        actions: Listed[];
        'on-events': Listed[];
      }[];
      expect(config).toHaveLength(1);
      const [fakehub] = config;
      expect(fakehub).toMatchObject({ providerConfigKey: 'fakehub', provider: 'fake-api-key' });
      expect(fakehub!.syncs.map((s) => s.name)).toEqual(['items']);
      expect(fakehub!.actions.map((a) => a.name).sort()).toEqual([
        'refuse',
        'relay-summary',
        'slow-echo',
        'summarize-items',
      ]);
      expect(fakehub!['on-events'].map((o) => o.name)).toEqual([
        'check-account',
        'farewell',
        'mark-onboarded',
      ]);
      // Nango's models list for zero-yaml functions (clients map over it): each schema definition by name.
      expect(fakehub!.syncs[0]).toMatchObject({
        models: [{ name: 'FakehubItem', fields: [] }],
        is_public: false,
        pre_built: false,
      });
      for (const fn of [...fakehub!.actions, ...fakehub!['on-events']]) {
        expect(fn).toMatchObject({ models: expect.any(Array), is_public: false, pre_built: false });
      }
      expect(
        (fakehub!.actions.find((a) => a.name === 'summarize-items')!.models as { name: string }[])
          .map((m) => m.name)
          .sort(),
      ).toEqual(['ActionInput_fakehub_summarizeitems', 'ActionOutput_fakehub_summarizeitems']);
      expect(fakehub!.actions.find((a) => a.name === 'summarize-items')).toMatchObject({
        version: '1.0.0',
        endpoints: [{ method: 'POST', path: '/fakehub/summary', group: 'Items' }],
        sdk_version: '0.71.10-zero',
        json_schema: expect.objectContaining({ definitions: expect.any(Object) }),
      });

      const openai = (await nango.getScriptsConfig('openai')) as unknown as {
        data: { name: string; description: string; parameters: Record<string, unknown> }[];
      };
      const tool = openai.data.find((f) => f.name === 'summarize-items');
      expect(tool).toEqual({
        name: 'summarize-items',
        description: expect.stringContaining('Reads the account'),
        parameters: expect.objectContaining({
          type: 'object',
          properties: expect.objectContaining({ owner: { type: 'string', minLength: 1 } }),
          required: ['owner'],
        }),
      });
      expect(openai.data.map((f) => f.name).sort()).toEqual([
        'refuse',
        'relay-summary',
        'slow-echo',
        'summarize-items',
      ]);
    });

    it('needs environment:functions:read to read and environment:functions:write to deploy or delete', async () => {
      const reader = await createKey(stack.gatewayUrl, stack.secretKey, ['environment:functions:read']);
      expect((await api('GET', '/integrations/fakehub/functions', undefined, reader)).status).toBe(200);
      expectError(
        await api('POST', '/sync/deploy/confirmation', { flowConfigs: [] }, reader),
        403,
        'forbidden',
      );
      expectError(
        await api('DELETE', '/integrations/fakehub/functions/refuse?type=action', undefined, reader),
        403,
        'forbidden',
      );
    });

    it("prints the server's error for a deploy to an integration that does not exist, and stores nothing", async () => {
      const bad = prepareProject('functions-project');
      try {
        const index = join(bad, 'index.ts');
        // A second integration folder nobody created in this environment.
        mkdirSync(join(bad, 'ghosthub', 'actions'), { recursive: true });
        copyFileSync(
          join(bad, 'fakehub', 'actions', 'refuse.ts'),
          join(bad, 'ghosthub', 'actions', 'boo.ts'),
        );
        writeFileSync(index, `${readFileSync(index, 'utf8')}import './ghosthub/actions/boo.js';\n`);
        const run = await nangoDeploy(bad, stack.gatewayUrl, stack.secretKey);
        expect(run.code).toBe(11);
        expect(run.stdout).not.toContain('Successfully deployed');
        expect(run.stdout).toMatch(
          /Integration "ghosthub" does not exist in environment "\w+".*\(unknown_provider_config\)/,
        );
      } finally {
        rmSync(bad, { recursive: true, force: true });
      }
      expect((await nango.listFunctions({ uniqueKey: 'fakehub' })).pagination.total).toBe(8);
    });

    it('deploys a body larger than one NATS message (several bundles near the cap)', async () => {
      const bundle = readFileSync(join(project, 'build', 'fakehub_actions_refuse.cjs'), 'utf8');
      const names = ['big-a', 'big-b', 'big-c'];
      const res = await api('POST', '/sync/deploy', {
        flowConfigs: names.map((name) => ({
          syncName: name,
          providerConfigKey: 'fakehub',
          type: 'action',
          models: [],
          runs: null,
          // Real bundles carry inline source maps; this padding stands in for one.
          fileBody: { js: `${bundle}\n//# ${'x'.repeat(600 * 1024)}` },
        })),
        deployMode: 'single',
      });
      expect(res.status).toBe(200);
      expect((res.body as { name: string }[]).map((r) => r.name)).toEqual(names);
      const code = await nango.getFunctionCode({ uniqueKey: 'fakehub', name: 'big-b' });
      expect(code.code.length).toBeGreaterThan(600 * 1024);
      for (const name of names)
        await nango.deleteFunction({ uniqueKey: 'fakehub', name }, { type: 'action' });
    });

    it('refuses a CLI too old for the deploy payload with a message the CLI prints', async () => {
      const res = await call(stack.gatewayUrl, 'POST', '/sync/deploy/confirmation', {
        key: stack.secretKey,
        headers: { 'user-agent': 'nango-cli/0.39.0 (linux/6.1; node.js/18.0.0)' },
        body: { flowConfigs: [] },
      });
      const error = expectError(res, 400, 'invalid_cli_version');
      expect(error.message).toContain('0.39.25');
    });

    it('refuses a bundle over the size cap and a bad script name in the documented error shape', async () => {
      const flow = {
        syncName: 'big',
        providerConfigKey: 'fakehub',
        type: 'action',
        models: [],
        fileBody: { js: 'x'.repeat(800 * 1024) },
      };
      const big = expectError(
        await api('POST', '/sync/deploy', { flowConfigs: [flow] }),
        400,
        'invalid_body',
      );
      expect(big.errors?.[0]?.path).toEqual(['flowConfigs', 0, 'fileBody', 'js']);
      expectError(
        await api('POST', '/sync/deploy', {
          flowConfigs: [{ ...flow, syncName: 'no spaces', fileBody: { js: 'x' } }],
        }),
        400,
        'invalid_body',
      );
      expect((await nango.listFunctions({ uniqueKey: 'fakehub' })).pagination.total).toBe(8);
    });
  });

  describe('redeploy', () => {
    it('reconciles: functions removed from the project are deleted with their schedules and records, the rest keep their versions', async () => {
      const before = (await nango.getFunction({ uniqueKey: 'fakehub', name: 'summarize-items' }))
        .data as unknown as Listed;
      // The sync about to go: its connection's Temporal schedule (paused: autoStart false) and, after a
      // triggered run, its records.
      const items = { providerConfigKey: 'fakehub', connectionId: CONNECTION, model: 'FakehubItem' };
      const [itemsSync] = (await nango.syncStatus('fakehub', ['items'], CONNECTION)).syncs;
      const itemsSchedule = temporal.schedule.getHandle(`sync-${itemsSync!.id}`);
      expect((await itemsSchedule.describe()).state.paused).toBe(true);
      await nango.triggerSync('fakehub', ['items'], CONNECTION);
      const saved = await waitFor('the items sync to save records', async () => {
        const listed = await nango.listRecords(items);
        return listed.records.length > 0 ? listed.records : undefined;
      });
      // One batch shares its updated_at, so its records come in row id order (uuidv5 of the scope): sorted.
      expect(saved.map((r) => r.name).sort()).toEqual(ITEM_NAMES.slice(0, saved.length).sort());
      const index = join(project, 'index.ts');
      writeFileSync(
        index,
        readFileSync(index, 'utf8')
          .split('\n')
          .filter((line) => !line.includes('refuse') && !line.includes('syncs/items'))
          .join('\n'),
      );
      rmSync(join(project, 'fakehub', 'actions', 'refuse.ts'));
      rmSync(join(project, 'fakehub', 'syncs', 'items.ts'));
      const run = await nangoDeploy(project, stack.gatewayUrl, stack.secretKey);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('Successfully deployed the functions');
      await expectRedeployedFunctions();
      const same = (await nango.getFunction({ uniqueKey: 'fakehub', name: 'summarize-items' }))
        .data as unknown as Listed;
      expect(same.id).toBe(before.id);
      expect(
        await failure(nango.triggerAction('fakehub', CONNECTION, 'refuse', { reason: 'x' })),
      ).toMatchObject({
        status: 404,
        data: { error: { code: 'not_found' } },
      });
      // The removed sync took its schedule, its status and its records with it.
      await expect(itemsSchedule.describe()).rejects.toBeInstanceOf(ScheduleNotFoundError);
      expect((await nango.syncStatus('fakehub', ['items'], CONNECTION)).syncs).toEqual([]);
      expect((await nango.listRecords(items)).records).toEqual([]);
    });
  });

  describe('a legacy nango.yaml project', () => {
    it('is refused by the CLI 0.71.10 deploy as it is, and deploys once the same CLI migrated it', async () => {
      const legacy = prepareProject('legacy-yaml-project');
      try {
        // The CLI itself refuses: its deploy only accepts zero-yaml folders (e2e/README.md quotes the source).
        const refused = await nangoDeploy(legacy, stack.gatewayUrl, stack.secretKey, [
          '--action',
          'legacy-greet',
        ]);
        expect(refused.code).toBe(1);
        expect(refused.stderr).toContain(
          'The `nango.yaml` configuration file is deprecated. See the migration guide to Zero YAML',
        );
        const before = await nango.listFunctions({ uniqueKey: 'fakehub' });
        expect(before.data.map((f) => f.name)).not.toContain('legacy-greet');

        // The CLI's own migration turns nango.yaml + runAction into createAction with zod models.
        const migrated = await nangoCli(legacy, ['migrate-to-zero-yaml', '--no-interactive']);
        expect(migrated.stdout).toContain('Deleting nango.yaml');
        const run = await nangoDeploy(legacy, stack.gatewayUrl, stack.secretKey, [
          '--action',
          'legacy-greet',
        ]);
        expect(run.stdout).toContain('Successfully deployed the functions');
        expect(await nango.triggerAction('fakehub', CONNECTION, 'legacy-greet', { name: 'Ada' })).toEqual({
          message: 'Hello Ada from acme',
        });
        const described = (await nango.getFunction({ uniqueKey: 'fakehub', name: 'legacy-greet' }))
          .data as unknown as Listed;
        expect(described).toMatchObject({ type: 'action', name: 'legacy-greet' });
        await nango.deleteFunction({ uniqueKey: 'fakehub', name: 'legacy-greet' }, { type: 'action' });
      } finally {
        rmSync(legacy, { recursive: true, force: true });
      }
    });
  });

  describe('switchboard deploy', () => {
    it('deploys the compiled project with our own CLI, printing the plan and the versions', async () => {
      const run = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          [
            join(repoRoot(), 'packages', 'cli', 'dist', 'main.js'),
            '--host',
            stack.gatewayUrl,
            '--key',
            stack.secretKey,
            'deploy',
            project,
            '--integration',
            'fakehub',
          ],
          { timeout: 60_000 },
          (error, stdout, stderr) =>
            resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
        );
      });
      expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
      expect(run.stdout).toContain('updated action: fakehub/summarize-items');
      expect(run.stdout).toContain('- fakehub/summarize-items@v1.0.0');
      expect(run.stdout.trim().split('\n').pop()).toBe('Deployed');
      // The same project as the nango CLI deployed: nothing added, nothing removed.
      await expectRedeployedFunctions();
    });
  });
});
