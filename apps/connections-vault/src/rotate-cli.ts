/**
 * Rewraps every connection's credentials under the highest master key version:
 *   SWITCHBOARD_MASTER_KEYS="1:<old>,2:<new>" DATABASE_URL=... node apps/connections-vault/dist/rotate-cli.js [--batch-size=500] [--environment-id=<id>]
 * Roll the new keyring out to every vault replica first, run this, then drop the old version.
 * Prints one JSON report; exits 1 when a row could not be rewrapped.
 */
import { EnvelopeCipher, MasterKeyring } from '@switchboard/crypto';
import { createPrismaClient } from '@switchboard/db';
import { loadRotateEnv } from './config/env';
import { ConnectionsRepository } from './connections/connections.repository';
import { rewrapAllCredentials } from './rotation/rewrap-credentials';

async function main(): Promise<number> {
  const env = loadRotateEnv();
  const flag = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
  const unknown = process.argv.slice(2).filter((a) => !/^--(batch-size|environment-id)=/.test(a));
  if (unknown.length > 0) throw new Error(`unknown argument(s): ${unknown.join(' ')}`);
  const batchSize = Number(flag('batch-size') ?? 500);
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000) throw new Error('--batch-size must be 1..10000');
  const environmentId = flag('environment-id') === undefined ? undefined : Number(flag('environment-id'));
  if (environmentId !== undefined && !Number.isInteger(environmentId)) throw new Error('--environment-id must be a number');

  const keyring = new MasterKeyring(env.SWITCHBOARD_MASTER_KEYS);
  const db = createPrismaClient(env.DATABASE_URL, { poolSize: 2 });
  try {
    const report = await rewrapAllCredentials(new ConnectionsRepository(db), new EnvelopeCipher(keyring), keyring.currentVersion, {
      batchSize,
      ...(environmentId !== undefined ? { environmentId } : {}),
      onProgress: (r) => process.stderr.write(`rewrapped ${r.rewrapped} of ${r.scanned} rows so far\n`),
    });
    process.stdout.write(`${JSON.stringify(report)}\n`);
    return report.failed.length > 0 ? 1 : 0;
  } finally {
    await db.$disconnect();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  },
);
