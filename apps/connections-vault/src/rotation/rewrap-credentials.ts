import {
  newRewrapReport,
  type RewrapOptions as SharedRewrapOptions,
  type RewrapReport as SharedRewrapReport,
} from '@switchboard/config';
import type { EnvelopeCipher } from '@switchboard/crypto';
import type { ConnectionsRepository } from '../connections/connections.repository';
import { credentialsAad } from '../credentials/credentials-cipher';

export type RewrapReport = SharedRewrapReport<number>;
export type RewrapOptions = SharedRewrapOptions<number>;

/**
 * Rewraps every connection's data key under the current (highest) master key, in id order and in
 * batches, while the services keep serving: no lock is held across rows, and each row is replaced only
 * if it still holds the ciphertext that was read (compare-and-set), so a refresh that lands meanwhile is
 * never overwritten. Only the small wrapped data key changes; the credentials ciphertext stays as it is.
 * Safe to run again: rows already on the current version are skipped.
 */
export async function rewrapAllCredentials(
  repository: ConnectionsRepository,
  cipher: EnvelopeCipher,
  currentVersion: number,
  options: RewrapOptions = {},
): Promise<RewrapReport> {
  const batchSize = options.batchSize ?? 500;
  const report = newRewrapReport<number>(currentVersion);
  let afterId = 0;
  for (;;) {
    const rows = await repository.rowsToRewrap(afterId, currentVersion, batchSize, options.environmentId);
    if (rows.length === 0) break;
    afterId = rows[rows.length - 1]!.id;
    report.scanned += rows.length;

    const swaps: { id: number; from: string; to: string }[] = [];
    for (const row of rows) {
      try {
        swaps.push({
          id: row.id,
          from: row.credentials,
          to: cipher.rewrap(row.credentials, credentialsAad(row.id)),
        });
      } catch {
        report.failed.push(row.id);
      }
    }
    const swapped = new Set(await repository.swapCiphertexts(swaps));
    report.rewrapped += swapped.size;
    for (const swap of swaps.filter((s) => !swapped.has(s.id))) {
      await rewrapOne(repository, cipher, currentVersion, swap.id, report);
    }
    options.onProgress?.(report);
  }
  report.remaining = await repository.countNotOnVersion(currentVersion, options.environmentId);
  return report;
}

/** A row changed between our read and our write: look again, and rewrap what is there now if it still needs it. */
async function rewrapOne(
  repository: ConnectionsRepository,
  cipher: EnvelopeCipher,
  currentVersion: number,
  id: number,
  report: RewrapReport,
): Promise<void> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const current = await repository.credentialsOf(id);
    if (current === undefined || current === null || cipher.versionOf(current) === currentVersion) {
      report.changedConcurrently++;
      return;
    }
    let next: string;
    try {
      next = cipher.rewrap(current, credentialsAad(id));
    } catch {
      report.failed.push(id);
      return;
    }
    if ((await repository.swapCiphertexts([{ id, from: current, to: next }])).length === 1) {
      report.changedConcurrently++;
      report.rewrapped++;
      return;
    }
  }
  report.failed.push(id);
}
