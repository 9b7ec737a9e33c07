import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export const CONSOLE_USAGE = `  console users create --email EMAIL --role admin|developer|viewer [--account NAME]
                                        Create a console user (the first admin) straight in the
                                        database: needs DATABASE_URL, no key; the password comes from
                                        $SWITCHBOARD_CONSOLE_PASSWORD or stdin`;

/**
 * Console users belong to auth-connect, which owns their table; its one-shot command
 * (`apps/auth-connect/dist/console-users-cli.js`, in this repository or its image) does the work with
 * DATABASE_URL, as auth-connect's rotation command does. This only finds and runs it, passing stdin through.
 * `SWITCHBOARD_CONSOLE_USERS_CLI` names the file elsewhere.
 */
export function consoleUsersCli(): string {
  const configured = process.env.SWITCHBOARD_CONSOLE_USERS_CLI;
  const path = configured ?? join(__dirname, '../../../apps/auth-connect/dist/console-users-cli.js');
  if (!existsSync(path)) {
    throw new Error(
      `auth-connect's console-users-cli.js is not at ${path}: build auth-connect, or set SWITCHBOARD_CONSOLE_USERS_CLI`,
    );
  }
  return path;
}

export async function runConsoleCommand(args: string[]): Promise<number> {
  const [group, action, ...rest] = args;
  if (group !== 'users' || action !== 'create') {
    throw new Error(`unknown console command "${args.join(' ')}"\n${CONSOLE_USAGE}`);
  }
  const child = spawn(process.execPath, [consoleUsersCli(), 'create', ...rest], { stdio: 'inherit' });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}
