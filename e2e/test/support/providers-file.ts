import { createHash, randomUUID } from 'node:crypto';
import { renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Writes an operator providers file (SWITCHBOARD_PROVIDERS_FILE) and returns its path. `providers` is the
 * file's YAML, or its entries as an object, written as JSON: YAML is a superset of JSON, so the catalog
 * loader reads that as is.
 *
 * The file is named by its content, so every file asking for the same providers names the same path and
 * stacks started with it can be shared (standard-stack.ts). It is written under a name of its own, then
 * renamed: a service reading the path never sees half a file.
 */
export function writeProvidersFile(providers: string | Record<string, unknown>): string {
  const text = typeof providers === 'string' ? providers : JSON.stringify(providers, null, 2);
  const digest = createHash('sha256').update(text).digest('hex').slice(0, 16);
  const file = join(tmpdir(), `switchboard-providers-${digest}.yaml`);
  const partial = `${file}.${process.pid}.${randomUUID()}`;
  writeFileSync(partial, text);
  renameSync(partial, file);
  return file;
}

/**
 * The `connection_config` of a GitHub App entry (indented for a provider's body): the app's public link,
 * pinned to `linkPattern`, and the installation, both filled in by the flow rather than the end user.
 */
export function appConnectionConfigYaml(linkPattern: string): string {
  return `  connection_config:
    appPublicLink:
      type: string
      title: App public link
      format: uri
      pattern: '${linkPattern}'
      automated: true
    installation_id:
      type: string
      title: Installation ID
      pattern: '^[0-9]+$'
      automated: true
`;
}
