import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ApiClient } from './api-client';

type Output = (line: string) => void;

export const DEPLOY_USAGE = `  deploy [DIR] [--compile] [--integration KEY] [--no-reconcile]
                                        Deploy a nango (zero-yaml) project: DIR's build/*.cjs and
                                        .nango/nango.json as \`nango compile\` leaves them (--compile runs
                                        it first, with the project's own nango package)`;

/** What `nango compile` writes to `.nango/nango.json`, in the parts we read. */
interface ParsedScript {
  name: string;
  type: 'sync' | 'action';
  description?: string;
  version?: string;
  input?: string | null;
  output?: string[] | null;
  scopes?: string[];
  endpoint?: { method: string; path: string; group?: string } | null;
  endpoints?: { method: string; path: string; group?: string }[];
  runs?: string | null;
  auto_start?: boolean;
  sync_type?: 'full' | 'incremental';
  track_deletes?: boolean;
  webhookSubscriptions?: string[];
  json_schema?: Record<string, unknown> | null;
  features?: string[];
}
interface ParsedIntegration {
  providerConfigKey: string;
  actions?: ParsedScript[];
  syncs?: ParsedScript[];
  onEventScripts?: Record<string, string[]>;
}

interface FileBody {
  js: string;
  ts?: string;
}

export interface DeployOptions {
  integration?: string;
  reconcile: boolean;
}

function fileBody(dir: string, integration: string, folder: string, name: string): FileBody {
  const bundle = join(dir, 'build', `${integration}_${folder}_${name}.cjs`);
  if (!existsSync(bundle)) throw new Error(`missing compiled bundle ${bundle}: compile the project first`);
  const source = join(dir, integration, folder, `${name}.ts`);
  return {
    js: readFileSync(bundle, 'utf8'),
    ...(existsSync(source) ? { ts: readFileSync(source, 'utf8') } : {}),
  };
}

/** The body of `POST /sync/deploy(/confirmation)` for a compiled project, as the nango CLI builds it. */
export function buildDeployBody(dir: string, options: DeployOptions): Record<string, unknown> {
  const manifest = join(dir, '.nango', 'nango.json');
  if (!existsSync(manifest))
    throw new Error(`${manifest} not found: run with --compile or \`nango compile\``);
  let integrations = JSON.parse(readFileSync(manifest, 'utf8')) as ParsedIntegration[];
  if (options.integration) {
    integrations = integrations.filter((i) => i.providerConfigKey === options.integration);
    if (integrations.length === 0) throw new Error(`the project has no integration "${options.integration}"`);
  }
  const flowConfigs = integrations.flatMap((integration) =>
    [...(integration.syncs ?? []), ...(integration.actions ?? [])].map((script) => {
      const isSync = script.type === 'sync';
      return {
        syncName: script.name,
        providerConfigKey: integration.providerConfigKey,
        type: script.type,
        models: script.output ?? [],
        version: script.version ?? '',
        runs: isSync ? (script.runs ?? null) : null,
        track_deletes: script.track_deletes ?? false,
        metadata: { description: script.description ?? '', scopes: script.scopes ?? [] },
        ...(script.input ? { input: script.input } : {}),
        ...(isSync
          ? {
              auto_start: script.auto_start ?? false,
              attributes: {},
              sync_type: script.sync_type ?? 'full',
              webhookSubscriptions: script.webhookSubscriptions ?? [],
            }
          : {}),
        endpoints: isSync ? (script.endpoints ?? []) : script.endpoint ? [script.endpoint] : [],
        fileBody: fileBody(dir, integration.providerConfigKey, isSync ? 'syncs' : 'actions', script.name),
        models_json_schema: script.json_schema ?? null,
        features: script.features ?? [],
      };
    }),
  );
  const onEventScriptsByProvider = integrations.map((integration) => ({
    providerConfigKey: integration.providerConfigKey,
    scripts: Object.entries(integration.onEventScripts ?? {}).flatMap(([event, names]) =>
      names.map((name) => ({
        name,
        event,
        fileBody: fileBody(dir, integration.providerConfigKey, 'on-events', name),
      })),
    ),
  }));
  return {
    flowConfigs,
    onEventScriptsByProvider,
    deployMode: options.integration ? 'integration' : 'all',
    reconcile: options.reconcile,
    debug: false,
    source: 'repo',
  };
}

/** `nango compile` with the project's own nango package, offline and without prompts. */
function compile(dir: string, out: Output): void {
  const cli = require.resolve('nango/dist/index.js', { paths: [dir] });
  out('Compiling with the nango CLI…');
  execFileSync(process.execPath, [cli, 'compile', '--no-interactive'], {
    cwd: dir,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      ...process.env,
      CI: 'true',
      NANGO_CLI_TELEMETRY: 'false',
      NANGO_CLI_UPGRADE_MODE: 'ignore',
      NANGO_CLI_DEPENDENCY_UPDATE: 'false',
    },
  });
}

interface Plan {
  [list: string]: { name: string; providerConfigKey: string }[] | string[];
}

export async function runDeploy(api: ApiClient, args: string[], out: Output): Promise<void> {
  const flag = (name: string) => {
    const i = args.indexOf(name);
    return i === -1 ? undefined : args[i + 1];
  };
  const integration = flag('--integration');
  const dir = args.find((a, i) => !a.startsWith('--') && args[i - 1] !== '--integration') ?? '.';
  if (args.includes('--compile') || !existsSync(join(dir, '.nango', 'nango.json'))) compile(dir, out);
  const options = { reconcile: !args.includes('--no-reconcile'), ...(integration ? { integration } : {}) };
  const body = buildDeployBody(dir, options);

  out('Checking what changes…');
  const plan = await api.call<Plan>('POST', '/sync/deploy/confirmation', body);
  for (const [list, label] of [
    ['newSyncs', 'new sync'],
    ['updatedSyncs', 'updated sync'],
    ['deletedSyncs', 'deleted sync'],
    ['newActions', 'new action'],
    ['updatedActions', 'updated action'],
    ['deletedActions', 'deleted action'],
    ['newOnEventScripts', 'new on-event script'],
    ['updatedOnEventScripts', 'updated on-event script'],
    ['deletedOnEventScripts', 'deleted on-event script'],
  ] as const) {
    for (const entry of (plan[list] ?? []) as { name: string; providerConfigKey: string }[]) {
      out(`  ${label}: ${entry.providerConfigKey}/${entry.name}`);
    }
  }

  const count = (body.flowConfigs as unknown[]).length;
  out(`Deploying ${count} function(s)…`);
  const deployed = await api.call<{ name: string; version: string; providerConfigKey: string }[]>(
    'POST',
    '/sync/deploy',
    body,
  );
  for (const d of deployed) out(`- ${d.providerConfigKey}/${d.name}@v${d.version}`);
  out('Deployed');
}
