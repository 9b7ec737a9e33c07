// `node dist/seed-cli.js`: seeds the development account (run by `npm start` after migrations).
import { parseEnv, envFragments } from '@switchboard/config';
import { createPrismaClient } from '@switchboard/db';
import { z } from 'zod';
import { DEV_ACCOUNT_NAME, seedDevelopment } from './seed/seed';

const env = parseEnv(
  z.object({
    ...envFragments.database,
    SEED_ACCOUNT_NAME: z.string().min(1).max(255).default(DEV_ACCOUNT_NAME),
    SWITCHBOARD_SECRET_KEY: z.uuid({ version: 'v4', message: 'must be a UUID v4 (the secret key format)' }),
  }),
);

async function main(): Promise<void> {
  const db = createPrismaClient(env.DATABASE_URL, { poolSize: 1 });
  try {
    const result = await seedDevelopment(db, env.SWITCHBOARD_SECRET_KEY, env.SEED_ACCOUNT_NAME);
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    await db.$disconnect();
  }
}

main().catch((error: unknown) => {
  console.error(`seed failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
