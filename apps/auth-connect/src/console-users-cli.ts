/**
 * Creates a console user straight in the database, for the first admin (no HTTP route creates a user
 * without an admin's session):
 *   DATABASE_URL=... SWITCHBOARD_CONSOLE_PASSWORD=... node apps/auth-connect/dist/console-users-cli.js \
 *     create --email ada@example.com --role admin [--account <account name>]
 * The password is read from SWITCHBOARD_CONSOLE_PASSWORD, else from stdin (one line), never from an argument
 * (it would show in the process list and the shell history). `--account` may be left out when the
 * installation has one account. Prints the created user as JSON; exits 1 with a message otherwise.
 * `switchboard console users create` (packages/cli) runs this file.
 */
import { parseArgs } from 'node:util';
import { envFragments, parseEnv } from '@switchboard/config';
import { CONSOLE_ROLES, SwitchboardError, type ConsoleRole } from '@switchboard/contracts';
import { createPrismaClient, type PrismaClient } from '@switchboard/db';
import { z } from 'zod';
import { createConsoleUser } from './console/console-users';

const USAGE =
  'usage: console-users-cli create --email <email> --role admin|developer|viewer [--account <name>]\n' +
  '(password from SWITCHBOARD_CONSOLE_PASSWORD or stdin)';

async function readPassword(): Promise<string> {
  const fromEnv = process.env.SWITCHBOARD_CONSOLE_PASSWORD;
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  if (process.stdin.isTTY) process.stderr.write('Password (then Enter, Ctrl-D): ');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

async function accountId(db: PrismaClient, name: string | undefined): Promise<number> {
  const accounts = await db.account.findMany({
    where: name === undefined ? {} : { name },
    select: { id: true },
    take: 2,
  });
  if (accounts.length === 1) return accounts[0]!.id;
  if (name !== undefined) throw new Error(`no account named "${name}"`);
  throw new Error(
    accounts.length === 0
      ? 'no account yet: run the seed first (npm start does)'
      : 'several accounts: name one with --account <name>',
  );
}

async function main(): Promise<void> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: { email: { type: 'string' }, role: { type: 'string' }, account: { type: 'string' } },
  });
  if (positionals[0] !== 'create' || positionals.length !== 1 || !values.email || !values.role) {
    throw new Error(USAGE);
  }
  if (!(CONSOLE_ROLES as readonly string[]).includes(values.role)) {
    throw new Error(`--role must be one of ${CONSOLE_ROLES.join(', ')}`);
  }
  const env = parseEnv(z.object({ ...envFragments.database }));
  const password = await readPassword();
  const db = createPrismaClient(env.DATABASE_URL, { poolSize: 1 });
  try {
    const user = await createConsoleUser(db, await accountId(db, values.account), {
      email: values.email,
      role: values.role as ConsoleRole,
      password,
    });
    process.stdout.write(`${JSON.stringify(user)}\n`);
  } finally {
    await db.$disconnect();
  }
}

main().catch((error: unknown) => {
  const detail =
    error instanceof SwitchboardError ? `${error.code}: ${error.message}` : (error as Error).message;
  process.stderr.write(`console-users-cli: ${detail}\n`);
  process.exit(1);
});
