/**
 * Rewraps the relay's sealed webhook signing keys (current and previous) under the highest master key:
 *   SWITCHBOARD_MASTER_KEYS="1:<old>,2:<new>" DATABASE_URL=... node apps/webhook-relay/dist/rewrap-cli.js [--batch-size=500] [--environment-id=<id>]
 * Roll the new keyring out to every relay replica first, run this, then drop the old version.
 * Prints one JSON report; exits 1 when a key could not be rewrapped or one is still on an old version.
 */
import { runRewrapCommand } from '@switchboard/config';
import { EnvelopeCipher, MasterKeyring } from '@switchboard/crypto';
import { createPrismaClient, type PrismaClient } from '@switchboard/db';
import { rewrapSigningKeys } from './rotation/rewrap-signing-keys';

runRewrapCommand({
  open: (databaseUrl) => createPrismaClient(databaseUrl, { poolSize: 2 }),
  close: (db: PrismaClient) => db.$disconnect(),
  rewrap: (db, masterKeys, options) => {
    const keyring = new MasterKeyring(masterKeys);
    return rewrapSigningKeys(db, new EnvelopeCipher(keyring), keyring.currentVersion, options);
  },
});
