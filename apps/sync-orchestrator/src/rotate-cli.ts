/**
 * Rewraps every sync record's payload under the highest master key version:
 *   SWITCHBOARD_MASTER_KEYS="1:<old>,2:<new>" DATABASE_URL=... node apps/sync-orchestrator/dist/rotate-cli.js [--batch-size=500] [--environment-id=<id>]
 * Roll the new keyring out to every orchestrator replica and worker first, run this, then drop the old
 * version. Prints one JSON report; exits 1 when a record could not be rewrapped or one is still on an old
 * version (as auth-connect's `rewrap-cli`: a zero exit means the old version may go).
 */
import { rewrapCliArgs, runCommand } from '@switchboard/config';
import { EnvelopeCipher, MasterKeyring } from '@switchboard/crypto';
import { createPgPool } from '@switchboard/db';
import { loadRotateEnv } from './config/env';
import { rewrapAllRecords } from './records/rewrap-records';

async function main(): Promise<number> {
  const env = loadRotateEnv();
  const { batchSize, environmentId } = rewrapCliArgs(process.argv.slice(2));

  const keyring = new MasterKeyring(env.SWITCHBOARD_MASTER_KEYS);
  const pool = createPgPool(env.DATABASE_URL, { poolSize: 2 });
  try {
    const report = await rewrapAllRecords(pool, new EnvelopeCipher(keyring), keyring.currentVersion, {
      batchSize,
      ...(environmentId !== undefined ? { environmentId } : {}),
      onProgress: (r) => process.stderr.write(`rewrapped ${r.rewrapped} of ${r.scanned} records so far\n`),
    });
    process.stdout.write(`${JSON.stringify(report)}\n`);
    return report.failed.length > 0 || report.remaining > 0 ? 1 : 0;
  } finally {
    await pool.end();
  }
}

runCommand(main);
