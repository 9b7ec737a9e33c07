/**
 * Rewraps every connection's credentials under the highest master key version:
 *   SWITCHBOARD_MASTER_KEYS="1:<old>,2:<new>" DATABASE_URL=... node apps/connections-vault/dist/rotate-cli.js [--batch-size=500] [--environment-id=<id>]
 * Roll the new keyring out to every vault replica first, run this, then drop the old version.
 * Prints one JSON report; exits 1 when a row could not be rewrapped or one is still on an old version (as the
 * other rewrap commands: a zero exit means the old version may go).
 */
import { rewrapCliArgs, runCommand } from '@switchboard/config';
import { EnvelopeCipher, MasterKeyring } from '@switchboard/crypto';
import { createPrismaClient } from '@switchboard/db';
import { loadRotateEnv } from './config/env';
import { ConnectionsRepository } from './connections/connections.repository';
import { rewrapAllCredentials } from './rotation/rewrap-credentials';

async function main(): Promise<number> {
  const env = loadRotateEnv();
  const { batchSize, environmentId } = rewrapCliArgs(process.argv.slice(2));

  const keyring = new MasterKeyring(env.SWITCHBOARD_MASTER_KEYS);
  const db = createPrismaClient(env.DATABASE_URL, { poolSize: 2 });
  try {
    const report = await rewrapAllCredentials(
      new ConnectionsRepository(db),
      new EnvelopeCipher(keyring),
      keyring.currentVersion,
      {
        batchSize,
        ...(environmentId !== undefined ? { environmentId } : {}),
        onProgress: (r) => process.stderr.write(`rewrapped ${r.rewrapped} of ${r.scanned} rows so far\n`),
      },
    );
    process.stdout.write(`${JSON.stringify(report)}\n`);
    return report.failed.length > 0 || report.remaining > 0 ? 1 : 0;
  } finally {
    await db.$disconnect();
  }
}

runCommand(main);
