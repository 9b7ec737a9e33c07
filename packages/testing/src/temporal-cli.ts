import { existsSync, readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';

/**
 * The Temporal CLI (its `server start-dev` is the dev server): $TEMPORAL_CLI_BIN, else the one the
 * project's setup built (`~/.cache/switchboard/tools/temporal-<version>/`, newest first), else the first
 * `temporal` on PATH. For tests that start a Temporal server of their own, e.g. with a dynamic config
 * (`TestWorkflowEnvironment.createLocal` with an `existing-path` executable).
 */
export function temporalCliBinary(): string {
  if (process.env.TEMPORAL_CLI_BIN) return process.env.TEMPORAL_CLI_BIN;
  const tools = process.env.SWITCHBOARD_TOOLS_DIR ?? join(homedir(), '.cache', 'switchboard', 'tools');
  const built = existsSync(tools)
    ? readdirSync(tools)
        .filter((name) => name.startsWith('temporal-v'))
        .sort((a, b) => b.localeCompare(a, 'en', { numeric: true }))
        .map((name) => join(tools, name, 'temporal'))
        .find((p) => existsSync(p))
    : undefined;
  if (built) return built;
  const found = (process.env.PATH ?? '')
    .split(delimiter)
    .map((d) => join(d, 'temporal'))
    .find((p) => existsSync(p));
  if (!found) throw new Error('the Temporal CLI was not found: run the setup or set TEMPORAL_CLI_BIN');
  return found;
}
