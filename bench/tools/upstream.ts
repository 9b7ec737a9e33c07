import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';

/**
 * The benches' provider: an OAuth 2 provider whose base URL is the connection's `origin` (a loopback
 * upstream the bench starts). Writes it to a providers file for SWITCHBOARD_PROVIDERS_FILE and returns
 * the file's path.
 */
export function writeBenchProvidersFile(name: string): string {
  const file = join(os.tmpdir(), `switchboard-bench-${name}-providers-${process.pid}.json`);
  writeFileSync(
    file,
    JSON.stringify({
      'bench-upstream': {
        display_name: 'Bench upstream',
        categories: ['dev-tools'],
        docs: 'https://example.com/docs',
        auth_mode: 'OAUTH2',
        authorization_url: '${connectionConfig.origin}/authorize',
        token_url: '${connectionConfig.origin}/token',
        proxy: { base_url: '${connectionConfig.origin}' },
        connection_config: {
          origin: { type: 'string', title: 'Origin', pattern: '^http://127\\.0\\.0\\.1:[0-9]+$' },
        },
      },
    }),
  );
  return file;
}

/** One call to the management API; anything but a 2xx stops the bench. */
export async function api(
  base: string,
  key: string,
  method: string,
  path: string,
  body: unknown,
): Promise<void> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${await res.text()}`);
}

/** The `bench` integration and its `bench-1` connection (access token `bench-token`) to the upstream. */
export async function connectBenchUpstream(
  gatewayUrl: string,
  key: string,
  upstreamUrl: string,
): Promise<void> {
  await api(gatewayUrl, key, 'POST', '/integrations', {
    provider: 'bench-upstream',
    unique_key: 'bench',
    credentials: { type: 'OAUTH2', client_id: 'bench', client_secret: 'bench-secret' },
  });
  await api(gatewayUrl, key, 'POST', '/connections', {
    provider_config_key: 'bench',
    connection_id: 'bench-1',
    credentials: { type: 'OAUTH2', access_token: 'bench-token' },
    connection_config: { origin: upstreamUrl },
  });
}
