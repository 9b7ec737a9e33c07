import {
  rewrapSealedColumns,
  type RewrapOptions,
  type RewrapReport as SharedRewrapReport,
  type SealedColumn,
} from '@switchboard/config';
import type { EnvelopeCipher } from '@switchboard/crypto';
import type { PrismaClient } from '@switchboard/db';
import { variableAad } from '../environment-variables/environment-variables.service';
import { secretsAad } from '../integrations/integrations.service';

/** Failed values are named `integration:<id>` or `variable:<id>`. */
export type RewrapReport = SharedRewrapReport;

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
 * SWITCHBOARD_MASTER_KEYS (`rewrapSealedColumns`: in id order, compare-and-set per value, only the wrapped
 * data key changes). Safe to run again. OAuth flow states and connect-session defaults are sealed too but
 * live 30 minutes at most: they are not rewrapped, they expire.
 */
export async function rewrapAuthSecrets(
  db: PrismaClient,
  cipher: EnvelopeCipher,
  currentVersion: number,
  options: Omit<RewrapOptions, 'onProgress'> = {},
): Promise<RewrapReport> {
  return rewrapSealedColumns(columns(db, options.environmentId), cipher, currentVersion, options);
}
