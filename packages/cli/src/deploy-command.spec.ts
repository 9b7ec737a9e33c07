import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildDeployBody } from './deploy-command';

/** A project as `nango compile` leaves it: .nango/nango.json, build/*.cjs and the TypeScript sources. */
function compiledProject(): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-cli-deploy-'));
  mkdirSync(join(dir, '.nango'));
  mkdirSync(join(dir, 'build'));
  mkdirSync(join(dir, 'github', 'actions'), { recursive: true });
  writeFileSync(
    join(dir, '.nango', 'nango.json'),
    JSON.stringify([
      {
        providerConfigKey: 'github',
        actions: [
          {
            type: 'action',
            name: 'create-issue',
            description: 'Create an issue',
            endpoint: { method: 'POST', path: '/issues' },
            input: 'ActionInput_github_createissue',
            output: ['ActionOutput_github_createissue'],
            scopes: ['repo'],
            version: '1.2.3',
            json_schema: { definitions: { ActionInput_github_createissue: { type: 'object' } } },
            features: [],
          },
        ],
        syncs: [
          {
            type: 'sync',
            name: 'issues',
            description: 'Issues',
            auto_start: true,
            endpoints: [{ method: 'GET', path: '/issues' }],
            input: null,
            output: ['Issue'],
            runs: 'every hour',
            scopes: [],
            sync_type: 'full',
            track_deletes: false,
            version: '',
            webhookSubscriptions: [],
            features: ['checkpoints'],
          },
        ],
        onEventScripts: { 'post-connection-creation': ['welcome'], 'pre-connection-deletion': [] },
      },
      { providerConfigKey: 'slack', actions: [], syncs: [], onEventScripts: {} },
    ]),
  );
  writeFileSync(join(dir, 'build', 'github_actions_create-issue.cjs'), '"use strict"; /* action */');
  writeFileSync(join(dir, 'build', 'github_syncs_issues.cjs'), '"use strict"; /* sync */');
  writeFileSync(join(dir, 'build', 'github_on-events_welcome.cjs'), '"use strict"; /* on-event */');
  writeFileSync(join(dir, 'github', 'actions', 'create-issue.ts'), "import { createAction } from 'nango';");
  return dir;
}

describe('buildDeployBody', () => {
  let dir: string;
  beforeEach(() => {
    dir = compiledProject();
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('sends what `nango deploy` sends: flow configs with their bundles and sources, on-event scripts by integration', () => {
    const body = buildDeployBody(dir, { reconcile: true });
    expect(body).toMatchObject({ deployMode: 'all', reconcile: true, source: 'repo' });
    expect(body.flowConfigs).toEqual([
      expect.objectContaining({
        syncName: 'issues',
        providerConfigKey: 'github',
        type: 'sync',
        models: ['Issue'],
        runs: 'every hour',
        auto_start: true,
        sync_type: 'full',
        version: '',
        endpoints: [{ method: 'GET', path: '/issues' }],
        features: ['checkpoints'],
        fileBody: { js: '"use strict"; /* sync */' },
      }),
      expect.objectContaining({
        syncName: 'create-issue',
        type: 'action',
        models: ['ActionOutput_github_createissue'],
        input: 'ActionInput_github_createissue',
        runs: null,
        version: '1.2.3',
        metadata: { description: 'Create an issue', scopes: ['repo'] },
        endpoints: [{ method: 'POST', path: '/issues' }],
        fileBody: { js: '"use strict"; /* action */', ts: "import { createAction } from 'nango';" },
        models_json_schema: { definitions: { ActionInput_github_createissue: { type: 'object' } } },
      }),
    ]);
    expect(body.onEventScriptsByProvider).toEqual([
      {
        providerConfigKey: 'github',
        scripts: [
          {
            name: 'welcome',
            event: 'post-connection-creation',
            fileBody: { js: '"use strict"; /* on-event */' },
          },
        ],
      },
      // An integration without on-event scripts is still listed, so a reconcile removes its old ones.
      { providerConfigKey: 'slack', scripts: [] },
    ]);
  });

  it('narrows to one integration, and says what is missing', () => {
    const body = buildDeployBody(dir, { integration: 'slack', reconcile: false });
    expect(body).toMatchObject({ deployMode: 'integration', flowConfigs: [], reconcile: false });
    expect(() => buildDeployBody(dir, { integration: 'jira', reconcile: true })).toThrow(
      'the project has no integration "jira"',
    );
    rmSync(join(dir, 'build', 'github_syncs_issues.cjs'));
    expect(() => buildDeployBody(dir, { reconcile: true })).toThrow(
      /missing compiled bundle .*github_syncs_issues\.cjs/,
    );
  });
});
