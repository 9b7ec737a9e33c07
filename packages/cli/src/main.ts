#!/usr/bin/env node
import { ApiClient } from './api-client';
import { run, USAGE } from './commands';
import { runConsoleCommand } from './console-command';

function takeFlag(args: string[], flag: string): string | undefined {
  const i = args.indexOf(flag);
  if (i === -1) return undefined;
  const [, value] = args.splice(i, 2);
  return value;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args.length === 0 || args.includes('--help') || args.includes('-h')) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  // Console users live in auth-connect's database, not behind the API: no key, DATABASE_URL instead.
  if (args[0] === 'console') {
    process.exitCode = await runConsoleCommand(args.slice(1));
    return;
  }
  const host = takeFlag(args, '--host') ?? process.env.SWITCHBOARD_HOST ?? 'http://localhost:3003';
  const key = takeFlag(args, '--key') ?? process.env.SWITCHBOARD_SECRET_KEY;
  if (!key) throw new Error('no secret key: pass --key or set SWITCHBOARD_SECRET_KEY');
  await run(new ApiClient(host, key), args, (line) => process.stdout.write(`${line}\n`));
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
