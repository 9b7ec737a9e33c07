/**
 * Rewraps every sync record's payload under the highest master key version:
 *   SWITCHBOARD_MASTER_KEYS="1:<old>,2:<new>" DATABASE_URL=... node apps/sync-orchestrator/dist/rotate-cli.js [--batch-size=500] [--environment-id=<id>]
 * Roll the new keyring out to every orchestrator replica and worker first, run this, then drop the old
 * version. Prints one JSON report; exits 1 when a record could not be rewrapped or one is still on an old
 * version (`runRewrapCommand`, as every rewrap command).
 */
import { runRewrapCommand } from '@switchboard/config';
import { EnvelopeCipher, MasterKeyring } from '@switchboard/crypto';
import { createPgPool, type PgPool } from '@switchboard/db';
import { rewrapAllRecords } from '@switchboard/records-store';

runRewrapCommand({
  open: (databaseUrl) => createPgPool(databaseUrl, { poolSize: 2 }),
  close: (pool: PgPool) => pool.end(),
  rewrap: (pool, masterKeys, options) => {
    const keyring = new MasterKeyring(masterKeys);
    return rewrapAllRecords(pool, new EnvelopeCipher(keyring), keyring.currentVersion, {
      ...options,
      onProgress: (r) => process.stderr.write(`rewrapped ${r.rewrapped} of ${r.scanned} records so far\n`),
    });
  },
});
