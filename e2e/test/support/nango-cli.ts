import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, realpathSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const e2eRoot = join(__dirname, '..', '..');
/** The official CLI's entry (`nango` bin), from this package's devDependencies. */
const nangoPackage = realpathSync(join(e2eRoot, 'node_modules', 'nango'));
const cliEntry = join(nangoPackage, 'dist', 'index.js');

/**
 * A copy of a fixture project in a temp folder, laid out as the CLI wants it: `.nango/` present and a
 * node_modules holding only `nango` and the `zod` it was built with (4.3.6). Linking the workspace's own
 * node_modules instead makes the CLI's typecheck compare two zod versions' types and run out of memory.
 */
export function prepareProject(fixture: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-nango-project-'));
  cpSync(join(e2eRoot, 'fixtures', fixture), dir, { recursive: true });
  mkdirSync(join(dir, '.nango'), { recursive: true });
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(nangoPackage, join(dir, 'node_modules', 'nango'));
  symlinkSync(realpathSync(join(dirname(nangoPackage), 'zod')), join(dir, 'node_modules', 'zod'));
  return dir;
}

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * The official CLI with `args`, non-interactive and offline (no telemetry, no upgrade check, no npm
 * install): it talks to NANGO_HOSTPORT only.
 */
export function nangoCli(
  projectDir: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [cliEntry, ...args],
      {
        cwd: projectDir,
        timeout: 120_000,
        maxBuffer: 10 * 1024 * 1024,
        env: {
          PATH: process.env.PATH,
          HOME: projectDir,
          XDG_CONFIG_HOME: join(projectDir, '.config'),
          CI: 'true',
          NANGO_CLI_TELEMETRY: 'false',
          NANGO_CLI_UPGRADE_MODE: 'ignore',
          NANGO_CLI_DEPENDENCY_UPDATE: 'false',
          ...env,
        },
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/**
 * `nango deploy dev --auto-confirm --allow-destructive` against our gateway.
 * Several failures exit 0, so callers check stdout for the success line, not only the exit code.
 */
export function nangoDeploy(
  projectDir: string,
  hostport: string,
  secretKey: string,
  extraArgs: string[] = [],
): Promise<CliRun> {
  return nangoCli(
    projectDir,
    ['deploy', 'dev', '--auto-confirm', '--allow-destructive', '--no-interactive', ...extraArgs],
    { NANGO_HOSTPORT: hostport, NANGO_SECRET_KEY_DEV: secretKey },
  );
}
