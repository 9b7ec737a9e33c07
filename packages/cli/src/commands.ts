import type { ApiClient } from './api-client';
import { CONSOLE_USAGE } from './console-command';
import { DEPLOY_USAGE, runDeploy } from './deploy-command';
import { runWebhookCommand, WEBHOOK_USAGE } from './webhook-commands';

export type Output = (line: string) => void;
type Variable = { name: string; value: string };

export const USAGE = `Usage: switchboard [--host URL] [--key SECRET_KEY] <command>

Commands:
  env-vars list                         List the environment's variables
  env-vars set NAME=VALUE [NAME=VALUE]  Add or change variables (others are kept)
  env-vars unset NAME [NAME]            Remove variables
  api-keys create --name NAME --scope SCOPE [--scope SCOPE]
                                        Create a key with the given scopes (its secret is printed once)
  api-keys revoke ID                    Revoke a key
  integrations list                     List integrations
${WEBHOOK_USAGE}
${DEPLOY_USAGE}
${CONSOLE_USAGE}

--host defaults to $SWITCHBOARD_HOST or http://localhost:3003; --key to $SWITCHBOARD_SECRET_KEY.`;

function parseAssignment(arg: string): Variable {
  const eq = arg.indexOf('=');
  if (eq <= 0) throw new Error(`expected NAME=VALUE, got "${arg}"`);
  return { name: arg.slice(0, eq), value: arg.slice(eq + 1) };
}

function flagValues(args: string[], flag: string): string[] {
  const values: string[] = [];
  for (let i = 0; i < args.length; i++)
    if (args[i] === flag && args[i + 1] !== undefined) values.push(args[++i]!);
  return values;
}

export async function run(api: ApiClient, args: string[], out: Output): Promise<void> {
  const [group, action, ...rest] = args;
  if (group === 'deploy') return runDeploy(api, args.slice(1), out);
  switch (`${group} ${action}`) {
    case 'env-vars list': {
      const vars = await api.call<Variable[]>('GET', '/environment-variables');
      for (const v of vars) out(`${v.name}=${v.value}`);
      return;
    }
    case 'env-vars set': {
      if (rest.length === 0) throw new Error('env-vars set needs at least one NAME=VALUE');
      const updates = new Map(rest.map(parseAssignment).map((v) => [v.name, v.value]));
      const current = await api.call<Variable[]>('GET', '/environment-variables');
      const merged = new Map(current.map((v) => [v.name, v.value]));
      for (const [name, value] of updates) merged.set(name, value);
      const stored = await api.call<Variable[]>('PUT', '/environment-variables', {
        variables: [...merged].map(([name, value]) => ({ name, value })),
      });
      out(`${stored.length} variable(s) stored`);
      return;
    }
    case 'env-vars unset': {
      const current = await api.call<Variable[]>('GET', '/environment-variables');
      const kept = current.filter((v) => !rest.includes(v.name));
      await api.call('PUT', '/environment-variables', { variables: kept });
      out(`${current.length - kept.length} variable(s) removed`);
      return;
    }
    case 'api-keys create': {
      const [name] = flagValues(rest, '--name');
      const scopes = flagValues(rest, '--scope');
      if (!name || scopes.length === 0)
        throw new Error('api-keys create needs --name and at least one --scope');
      const { data } = await api.call<{ data: { id: number; secret_key: string; scopes: string[] } }>(
        'POST',
        '/environment/api-keys',
        {
          display_name: name,
          scopes,
        },
      );
      out(`id: ${data.id}`);
      out(`scopes: ${data.scopes.join(' ')}`);
      out(`secret key (shown once): ${data.secret_key}`);
      return;
    }
    case 'api-keys revoke': {
      await api.call('DELETE', `/environment/api-keys/${encodeURIComponent(rest[0] ?? '')}`);
      out('revoked');
      return;
    }
    case 'integrations list': {
      const { data } = await api.call<{
        data: { unique_key: string; provider: string; display_name: string }[];
      }>('GET', '/integrations');
      for (const i of data) out(`${i.unique_key}\t${i.provider}\t${i.display_name}`);
      return;
    }
    default:
      if (await runWebhookCommand(api, args, out)) return;
      throw new Error(USAGE);
  }
}
