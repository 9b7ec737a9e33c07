import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { RewrapReport } from '@switchboard/config';
import { repoRoot } from './repo';

const run = promisify(execFile);

/**
 * Runs a service's rewrap command from its build (`apps/<app>/dist/<script>`) as an operator would, against
 * `databaseUrl` with the keyring `masterKeys`, and answers the report (`RewrapReport`) it printed last.
 * Rejects when the command exits non-zero.
 */
export async function runRewrapCli<Id = string>(
  script: string,
  options: { databaseUrl: string; masterKeys: string; batchSize: number; environmentId: number },
): Promise<RewrapReport<Id>> {
  const { stdout } = await run(
    process.execPath,
    [
      join(repoRoot(), script),
      `--batch-size=${options.batchSize}`,
      `--environment-id=${options.environmentId}`,
    ],
    {
      env: { ...process.env, DATABASE_URL: options.databaseUrl, SWITCHBOARD_MASTER_KEYS: options.masterKeys },
    },
  );
  return JSON.parse(stdout.trim().split('\n').pop()!) as RewrapReport<Id>;
}
