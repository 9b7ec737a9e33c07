import {
  rewrapSealedColumns,
  type RewrapOptions,
  type RewrapReport as SharedRewrapReport,
  type SealedColumn,
} from '@switchboard/config';
import type { EnvelopeCipher } from '@switchboard/crypto';
import type { RelayDb } from '@switchboard/db';
import { keyAad } from '../settings/settings.service';

/**
 * Failed values are named `signing:<environmentId>` or `previous:<environmentId>` (a row of
 * `webhook_settings` is its environment's: the environment id is the column's id).
 */
export type RewrapReport = SharedRewrapReport;

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
        (await page(after, take)).map((r) => ({
          id: r.environmentId,
          sealed: r.signingKey,
          aad: keyAad(r.environmentId),
        })),
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
          id: r.environmentId,
          sealed: r.previousSigningKey,
          aad: keyAad(r.environmentId),
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
 * old version can be dropped from the relay's SWITCHBOARD_MASTER_KEYS (`rewrapSealedColumns`: in
 * environment order, compare-and-set per value, so a signing-key rotation meanwhile, already sealed with the
 * new keyring, is never overwritten; only the wrapped data key changes, never the signing key itself). The
 * current keys go first: the key such a rotation demotes to previous is found by the second column. Safe to
 * run again.
 */
export async function rewrapSigningKeys(
  db: RelayDb,
  cipher: EnvelopeCipher,
  currentVersion: number,
  options: RewrapOptions = {},
): Promise<RewrapReport> {
  return rewrapSealedColumns(columns(db, options.environmentId), cipher, currentVersion, options);
}
