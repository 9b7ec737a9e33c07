import type { ApiClient } from './api-client';
/** Where a command prints its lines. */
type Output = (line: string) => void;

export const WEBHOOK_USAGE = `  webhooks show                         The environment's webhook URLs, toggles and signing key
  webhooks set [--primary-url URL|""] [--secondary-url URL|""] [--on-auth-creation true|false]
               [--on-auth-refresh-error B] [--on-sync-error B] [--on-sync-completion-always B]
               [--on-async-action-completion B]
                                        Change webhook settings ("" clears a URL)
  webhooks rotate-key                   Replace the signing key (the old one signs for a grace period)
  webhooks deliveries [--status S] [--type T] [--limit N]
                                        Recent deliveries, newest first
  webhooks redeliver ID                 Send a delivery again (same webhook-id)`;

interface Settings {
  primary_url: string | null;
  secondary_url: string | null;
  [toggle: string]: string | boolean | null;
}
interface Environment {
  name: string;
  webhook_settings: Settings;
  webhook_signing_key: string;
  previous_webhook_signing_key_expires_at: string | null;
  disabled_webhook_urls: { url: string; reason: string }[];
}

const TOGGLES = [
  'on-auth-creation',
  'on-auth-refresh-error',
  'on-sync-error',
  'on-sync-completion-always',
  'on-async-action-completion',
];

function printEnvironment(env: Environment, out: Output): void {
  out(`environment: ${env.name}`);
  for (const [name, value] of Object.entries(env.webhook_settings)) out(`${name}: ${value ?? '(none)'}`);
  out(`webhook_signing_key: ${env.webhook_signing_key}`);
  if (env.previous_webhook_signing_key_expires_at)
    out(`previous key signs until: ${env.previous_webhook_signing_key_expires_at}`);
  for (const d of env.disabled_webhook_urls) out(`disabled: ${d.url} (${d.reason})`);
}

function settingsPatch(args: string[]): Record<string, unknown> {
  const patch: Record<string, unknown> = {};
  for (let i = 0; i < args.length; i += 2) {
    const flag = args[i] ?? '';
    const value = args[i + 1];
    if (!flag.startsWith('--') || value === undefined)
      throw new Error(`webhooks set: expected --flag value, got "${flag}"`);
    const name = flag.slice(2);
    if (name === 'primary-url' || name === 'secondary-url')
      patch[name.replace('-', '_')] = value === '' ? null : value;
    else if (TOGGLES.includes(name)) {
      if (value !== 'true' && value !== 'false') throw new Error(`${flag} takes true or false`);
      patch[name.replaceAll('-', '_')] = value === 'true';
    } else throw new Error(`webhooks set: unknown flag ${flag}`);
  }
  if (Object.keys(patch).length === 0) throw new Error('webhooks set needs at least one setting');
  return patch;
}

/** `switchboard webhooks …`; false when the arguments are not a webhook command. */
export async function runWebhookCommand(api: ApiClient, args: string[], out: Output): Promise<boolean> {
  const [group, action, ...rest] = args;
  if (group !== 'webhooks') return false;
  switch (action) {
    case 'show': {
      printEnvironment((await api.call<{ data: Environment }>('GET', '/environment')).data, out);
      return true;
    }
    case 'set': {
      const { data } = await api.call<{ data: Environment }>('PATCH', '/environment', {
        webhook_settings: settingsPatch(rest),
      });
      printEnvironment(data, out);
      return true;
    }
    case 'rotate-key': {
      const { data } = await api.call<{
        data: { webhook_signing_key: string; previous_webhook_signing_key_expires_at: string | null };
      }>('POST', '/environment/webhook-signing-key/rotate');
      out(`webhook_signing_key: ${data.webhook_signing_key}`);
      if (data.previous_webhook_signing_key_expires_at)
        out(`previous key signs until: ${data.previous_webhook_signing_key_expires_at}`);
      return true;
    }
    case 'deliveries': {
      const query = new URLSearchParams();
      for (const flag of ['status', 'type', 'limit']) {
        const i = rest.indexOf(`--${flag}`);
        if (i !== -1 && rest[i + 1] !== undefined) query.set(flag, rest[i + 1]!);
      }
      const qs = query.toString();
      const page = await api.call<{
        data: {
          id: number;
          type: string;
          status: string;
          attempts: number;
          last_status_code: number | null;
          url: string;
          created_at: string;
        }[];
      }>('GET', `/environment/webhook-deliveries${qs ? `?${qs}` : ''}`);
      for (const d of page.data)
        out(
          `${d.id}\t${d.created_at}\t${d.type}\t${d.status}\t${d.attempts}\t${d.last_status_code ?? '-'}\t${d.url}`,
        );
      return true;
    }
    case 'redeliver': {
      const { data } = await api.call<{ data: { id: number; status: string } }>(
        'POST',
        `/environment/webhook-deliveries/${encodeURIComponent(rest[0] ?? '')}/redeliver`,
      );
      out(`delivery ${data.id} queued (${data.status})`);
      return true;
    }
    default:
      return false;
  }
}
