/**
 * Rewraps auth-connect's sealed integration secrets and environment variables under the highest master key:
 *   SWITCHBOARD_MASTER_KEYS="1:<old>,2:<new>" DATABASE_URL=... node apps/auth-connect/dist/rewrap-cli.js [--batch-size=500] [--environment-id=<id>]
 * Roll the new keyring out to every auth-connect replica first, run this, then drop the old version.
 * Prints one JSON report; exits 1 when a value could not be rewrapped or one is still on an old version.
 */
import { envFragments, parseEnv, rewrapCliArgs, runCommand } from '@switchboard/config';
import { EnvelopeCipher, MasterKeyring } from '@switchboard/crypto';
import { createPrismaClient } from '@switchboard/db';
import { z } from 'zod';
import { rewrapAuthSecrets } from './rotation/rewrap-secrets';

async function main(): Promise<number> {
  const env = parseEnv(z.object({ ...envFragments.database, ...envFragments.masterKeys }));
  const options = rewrapCliArgs(process.argv.slice(2));

  const keyring = new MasterKeyring(env.SWITCHBOARD_MASTER_KEYS);
  const db = createPrismaClient(env.DATABASE_URL, { poolSize: 2 });
  try {
    const report = await rewrapAuthSecrets(db, new EnvelopeCipher(keyring), keyring.currentVersion, options);
    process.stdout.write(`${JSON.stringify(report)}\n`);
    return report.failed.length > 0 || report.remaining > 0 ? 1 : 0;
  } finally {
    await db.$disconnect();
  }
}

runCommand(main);
