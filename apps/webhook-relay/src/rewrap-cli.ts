/**
 * Rewraps the relay's sealed webhook signing keys (current and previous) under the highest master key:
 *   SWITCHBOARD_MASTER_KEYS="1:<old>,2:<new>" DATABASE_URL=... node apps/webhook-relay/dist/rewrap-cli.js [--batch-size=500] [--environment-id=<id>]
 * Roll the new keyring out to every relay replica first, run this, then drop the old version.
 * Prints one JSON report; exits 1 when a key could not be rewrapped or one is still on an old version.
 */
import { rewrapCliArgs, runCommand } from '@switchboard/config';
import { EnvelopeCipher, MasterKeyring } from '@switchboard/crypto';
import { createPrismaClient } from '@switchboard/db';
import { loadRewrapEnv } from './config/env';
import { rewrapSigningKeys } from './rotation/rewrap-signing-keys';

async function main(): Promise<number> {
  const env = loadRewrapEnv();
  const options = rewrapCliArgs(process.argv.slice(2));

  const keyring = new MasterKeyring(env.SWITCHBOARD_MASTER_KEYS);
  const db = createPrismaClient(env.DATABASE_URL, { poolSize: 2 });
  try {
    const report = await rewrapSigningKeys(db, new EnvelopeCipher(keyring), keyring.currentVersion, options);
    process.stdout.write(`${JSON.stringify(report)}\n`);
    return report.failed.length > 0 || report.remaining > 0 ? 1 : 0;
  } finally {
    await db.$disconnect();
  }
}

runCommand(main);
