import {
  newRewrapReport,
  type RewrapOptions,
  type RewrapReport as SharedRewrapReport,
} from '@switchboard/config';
import type { EnvelopeCipher } from '@switchboard/crypto';
import type { PrismaClient } from '@switchboard/db';
import { variableAad } from '../environment-variables/environment-variables.service';
import { secretsAad } from '../integrations/integrations.service';

/** Failed values are named `integration:<id>` or `variable:<id>`. */
export type RewrapReport = SharedRewrapReport;

/** One kind of sealed value: how to page through it, its associated data, and a compare-and-set write. */
interface SealedColumn {
  kind: string;
  page(afterId: number, take: number): Promise<{ id: number; sealed: string | null; aad: string }[]>;
  /** Replaces `from` by `to` only if the row still holds `from`; true when it did. */
  swap(id: number, from: string, to: string): Promise<boolean>;
}

const columns = (db: PrismaClient, environmentId: number | undefined): SealedColumn[] => [
  {
    kind: 'integration',
    page: async (afterId, take) =>
      (
        await db.integration.findMany({
          where: { id: { gt: afterId }, ...(environmentId === undefined ? {} : { environmentId }) },
          orderBy: { id: 'asc' },
          take,
          select: { id: true, secrets: true },
        })
      ).map((r) => ({
        id: r.id,
        sealed: r.secrets,
        aad: secretsAad(r.id),
      })),
    swap: async (id, from, to) =>
      (await db.integration.updateMany({ where: { id, secrets: from }, data: { secrets: to } })).count === 1,
  },
  {
    kind: 'variable',
    page: async (afterId, take) =>
      (
        await db.environmentVariable.findMany({
          where: { id: { gt: afterId }, ...(environmentId === undefined ? {} : { environmentId }) },
          orderBy: { id: 'asc' },
          take,
          select: { id: true, environmentId: true, name: true, value: true },
        })
      ).map((r) => ({ id: r.id, sealed: r.value, aad: variableAad(r.environmentId, r.name) })),
    swap: async (id, from, to) =>
      (await db.environmentVariable.updateMany({ where: { id, value: from }, data: { value: to } })).count ===
      1,
  },
];

/**
 * Rewraps what auth-connect seals with the master keys and keeps (integration secrets, environment
 * variables) under the current, highest version, so the old version can be dropped from
 * SWITCHBOARD_MASTER_KEYS. As the vault's rotation: in id order, in batches, each value replaced only if it
 * still holds what was read (a value changed meanwhile was written with the new keyring and is left as it
 * is); only the wrapped data key changes. Safe to run again. OAuth flow states and connect-session defaults
 * are sealed too but live 30 minutes at most: they are not rewrapped, they expire.
 */
export async function rewrapAuthSecrets(
  db: PrismaClient,
  cipher: EnvelopeCipher,
  currentVersion: number,
  options: Omit<RewrapOptions, 'onProgress'> = {},
): Promise<RewrapReport> {
  const batchSize = options.batchSize ?? 500;
  const report = newRewrapReport<string>(currentVersion);
  for (const column of columns(db, options.environmentId)) {
    for await (const row of rowsOf(column, batchSize)) {
      if (row.sealed === null || versionOf(cipher, row.sealed) === currentVersion) continue;
      report.scanned++;
      let next: string;
      try {
        next = cipher.rewrap(row.sealed, row.aad);
      } catch {
        report.failed.push(`${column.kind}:${row.id}`);
        continue;
      }
      if (await column.swap(row.id, row.sealed, next)) report.rewrapped++;
      else report.changedConcurrently++;
    }
    for await (const row of rowsOf(column, batchSize)) {
      if (row.sealed !== null && versionOf(cipher, row.sealed) !== currentVersion) report.remaining++;
    }
  }
  return report;
}

/** Every row of the column, in id order, read `batchSize` at a time. */
async function* rowsOf(
  column: SealedColumn,
  batchSize: number,
): AsyncGenerator<{ id: number; sealed: string | null; aad: string }> {
  for (let afterId = 0; ; ) {
    const rows = await column.page(afterId, batchSize);
    if (rows.length === 0) return;
    afterId = rows[rows.length - 1]!.id;
    yield* rows;
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
