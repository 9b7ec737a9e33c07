/**
 * Rewraps every connection's credentials under the highest master key version:
 *   SWITCHBOARD_MASTER_KEYS="1:<old>,2:<new>" DATABASE_URL=... node apps/connections-vault/dist/rotate-cli.js [--batch-size=500] [--environment-id=<id>]
 * Roll the new keyring out to every vault replica first, run this, then drop the old version.
 * Prints one JSON report; exits 1 when a row could not be rewrapped or one is still on an old version
 * (`runRewrapCommand`, as every rewrap command).
 */
import { runRewrapCommand } from '@switchboard/config';
import { EnvelopeCipher, MasterKeyring } from '@switchboard/crypto';
import { createPrismaClient, type PrismaClient } from '@switchboard/db';
import { ConnectionsRepository } from './connections/connections.repository';
import { rewrapAllCredentials } from './rotation/rewrap-credentials';

runRewrapCommand({
  open: (databaseUrl) => createPrismaClient(databaseUrl, { poolSize: 2 }),
  close: (db: PrismaClient) => db.$disconnect(),
  rewrap: (db, masterKeys, options) => {
    const keyring = new MasterKeyring(masterKeys);
    return rewrapAllCredentials(
      new ConnectionsRepository(db),
      new EnvelopeCipher(keyring),
      keyring.currentVersion,
      {
        ...options,
        onProgress: (r) => process.stderr.write(`rewrapped ${r.rewrapped} of ${r.scanned} rows so far\n`),
      },
    );
  },
});
