import {
  newRewrapReport,
  type RewrapOptions,
  type RewrapReport as SharedRewrapReport,
} from '@switchboard/config';
import type { EnvelopeCipher } from '@switchboard/crypto';
import type { RelayDb } from '@switchboard/db';
import { keyAad } from '../settings/settings.service';

/** Failed values are named `signing:<environmentId>` or `previous:<environmentId>`. */
export type RewrapReport = SharedRewrapReport;

interface SealedValue {
  environmentId: number;
  sealed: string | null;
}

/** One sealed column of `webhook_settings`: how to page through it and a compare-and-set write. */
interface SealedColumn {
  kind: 'signing' | 'previous';
  page(afterEnvironmentId: number, take: number): Promise<SealedValue[]>;
  /** Replaces `from` by `to` only if the row still holds `from`; true when it did. */
  swap(environmentId: number, from: string, to: string): Promise<boolean>;
}

const columns = (db: RelayDb, environmentId: number | undefined): SealedColumn[] => {
  const page = async (afterEnvironmentId: number, take: number) =>
    db.webhookSettings.findMany({
      where:
        environmentId === undefined
          ? { environmentId: { gt: afterEnvironmentId } }
          : { environmentId: { gt: afterEnvironmentId, equals: environmentId } },
      orderBy: { environmentId: 'asc' },
      take,
      select: { environmentId: true, signingKey: true, previousSigningKey: true },
    });
  return [
    {
      kind: 'signing',
      page: async (after, take) =>
        (await page(after, take)).map((r) => ({ environmentId: r.environmentId, sealed: r.signingKey })),
      swap: async (id, from, to) =>
        (
          await db.webhookSettings.updateMany({
            where: { environmentId: id, signingKey: from },
            data: { signingKey: to },
          })
        ).count === 1,
    },
    {
      kind: 'previous',
      page: async (after, take) =>
        (await page(after, take)).map((r) => ({
          environmentId: r.environmentId,
          sealed: r.previousSigningKey,
        })),
      swap: async (id, from, to) =>
        (
          await db.webhookSettings.updateMany({
            where: { environmentId: id, previousSigningKey: from },
            data: { previousSigningKey: to },
          })
        ).count === 1,
    },
  ];
};

/**
 * Rewraps every environment's webhook signing key, and the previous one kept for a rotation's grace
 * period (expired ones too: they stay in the row), under the current, highest master key version, so the
 * old version can be dropped from the relay's SWITCHBOARD_MASTER_KEYS. As auth-connect's rewrap: in
 * environment order, in batches, each value replaced only if it still holds what was read, so a signing-key
 * rotation meanwhile (already sealed with the new keyring) is never overwritten; only the wrapped data key
 * changes, never the signing key itself. The current keys go first: the key such a rotation demotes to
 * previous is found by the second pass. `remaining` is counted once both are done, so it also sees a key
 * written meanwhile by a replica still on the old keyring. Safe to run again.
 */
export async function rewrapSigningKeys(
  db: RelayDb,
  cipher: EnvelopeCipher,
  currentVersion: number,
  options: RewrapOptions = {},
): Promise<RewrapReport> {
  const batchSize = options.batchSize ?? 500;
  const report = newRewrapReport<string>(currentVersion);
  const sealedColumns = columns(db, options.environmentId);
  for (const column of sealedColumns) {
    for await (const batch of batchesOf(column, batchSize)) {
      for (const row of batch) {
        if (row.sealed === null || versionOf(cipher, row.sealed) === currentVersion) continue;
        report.scanned++;
        let next: string;
        try {
          next = cipher.rewrap(row.sealed, keyAad(row.environmentId));
        } catch {
          report.failed.push(`${column.kind}:${row.environmentId}`);
          continue;
        }
        if (await column.swap(row.environmentId, row.sealed, next)) report.rewrapped++;
        else report.changedConcurrently++;
      }
      options.onProgress?.(report);
    }
  }
  for (const column of sealedColumns) {
    for await (const batch of batchesOf(column, batchSize)) {
      for (const row of batch)
        if (row.sealed !== null && versionOf(cipher, row.sealed) !== currentVersion) report.remaining++;
    }
  }
  return report;
}

/** Every row of the column, in environment order, `batchSize` at a time. */
async function* batchesOf(column: SealedColumn, batchSize: number): AsyncGenerator<SealedValue[]> {
  for (let after = 0; ; ) {
    const rows = await column.page(after, batchSize);
    if (rows.length === 0) return;
    after = rows[rows.length - 1]!.environmentId;
    yield rows;
  }
}

/** The master key version a value is wrapped with; undefined when it is not one of our envelopes. */
function versionOf(cipher: EnvelopeCipher, sealed: string): number | undefined {
  try {
    return cipher.versionOf(sealed);
  } catch {
    return undefined;
  }
}
