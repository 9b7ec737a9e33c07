import { randomInt } from 'node:crypto';
import { EnvelopeCipher, MasterKeyring } from '@switchboard/crypto';
import { createPrismaClient, type PrismaClient, type RelayDb } from '@switchboard/db';
import { EgressPolicy } from '@switchboard/egress';
import { testInfrastructure } from '@switchboard/testing';
import { envSchema } from '../config/env';
import { keyAad, SettingsService } from '../settings/settings.service';
import { rewrapSigningKeys } from './rewrap-signing-keys';

/** Master key rotation of the relay's sealed webhook signing keys against a real Postgres. */
describe('rewrapSigningKeys', () => {
  let db: PrismaClient;
  const k1 = MasterKeyring.generateKeyMaterial();
  const k2 = MasterKeyring.generateKeyMaterial();
  const before = new EnvelopeCipher(new MasterKeyring(`1:${k1}`));
  const during = new EnvelopeCipher(new MasterKeyring(`1:${k1},2:${k2}`));
  const after = new EnvelopeCipher(new MasterKeyring(`2:${k2}`));
  // The relay's settings table has no foreign key: environments of our own, far from other tests' ids.
  const base = 1_000_000_000 + randomInt(100_000) * 1_000;
  let next = base;
  const newEnvironment = () => next++;

  /** The relay's own settings service, as a replica running with `cipher`'s keyring. */
  const relay = (cipher: EnvelopeCipher) =>
    new SettingsService(
      db,
      cipher,
      EgressPolicy.forTraffic('SWITCHBOARD_WEBHOOK_EGRESS_ALLOW', undefined, ''),
      envSchema.parse({ SWITCHBOARD_MASTER_KEYS: `1:${k1}` }),
    );
  const versions = async (environmentId: number) => {
    const row = await db.webhookSettings.findUniqueOrThrow({ where: { environmentId } });
    return [
      during.versionOf(row.signingKey),
      row.previousSigningKey === null ? null : during.versionOf(row.previousSigningKey),
    ];
  };

  beforeAll(async () => {
    db = createPrismaClient((await testInfrastructure()).databaseUrl, { poolSize: 4 });
  }, 60_000);

  afterAll(async () => {
    await db.webhookSettings.deleteMany({ where: { environmentId: { gte: base, lt: next } } });
    await db.$disconnect();
  });

  it('moves every signing key and previous key to the new master key without changing them, and is safe to run again', async () => {
    const old = relay(before);
    const environments = Array.from({ length: 5 }, newEnvironment);
    const keys = new Map<number, { current: string; previous: string | null }>();
    for (const [i, environmentId] of environments.entries()) {
      const first = (await old.state(environmentId)).webhook_signing_key;
      // Every other environment is in a signing-key rotation's grace period: both columns are sealed.
      const current = i % 2 === 0 ? (await old.rotate(environmentId)).webhook_signing_key : first;
      keys.set(environmentId, { current, previous: i % 2 === 0 ? first : null });
    }

    // Unscoped, as an operator runs it: other tests' rows are sealed under keys of their own and fail.
    const mine = (ids: string[]) => ids.filter((id) => environments.includes(Number(id.split(':')[1])));
    const report = await rewrapSigningKeys(db, during, 2, { batchSize: 2 });
    expect(mine(report.failed)).toEqual([]);
    expect(report.rewrapped).toBe(8);

    const rolled = relay(after);
    for (const environmentId of environments) {
      expect(await versions(environmentId)).toEqual([2, keys.get(environmentId)!.previous ? 2 : null]);
      // What a delivery signs with, read by a relay that has the new key alone.
      expect((await rolled.forDelivery(environmentId))?.keys).toEqual(keys.get(environmentId));
    }

    const again = await rewrapSigningKeys(db, during, 2, { batchSize: 2 });
    expect(again.rewrapped).toBe(0);
    expect(mine(again.failed)).toEqual([]);
  });

  it('rewraps only the given environment', async () => {
    const old = relay(before);
    const [chosen, other] = [newEnvironment(), newEnvironment()];
    const key = (await old.state(chosen)).webhook_signing_key;
    await old.state(other);

    const report = await rewrapSigningKeys(db, during, 2, { environmentId: chosen });
    expect(report).toEqual({
      currentVersion: 2,
      scanned: 1,
      rewrapped: 1,
      changedConcurrently: 0,
      failed: [],
      remaining: 0,
    });
    expect((await relay(after).state(chosen)).webhook_signing_key).toBe(key);
    expect(await versions(other)).toEqual([1, null]);
  });

  it('never overwrites a signing-key rotation that happens while it runs', async () => {
    const environmentId = newEnvironment();
    const original = (await relay(before).state(environmentId)).webhook_signing_key;
    // A relay already on the new keyring rotates the signing key between the run's read and its write.
    const rotating = relay(during);
    let rotated: string | undefined;
    const findMany = db.webhookSettings.findMany.bind(db.webhookSettings);
    const settings = new Proxy(db.webhookSettings, {
      get: (target, property, receiver) =>
        property === 'findMany'
          ? async (args: Parameters<typeof findMany>[0]) => {
              const rows = await findMany(args);
              rotated ??= (await rotating.rotate(environmentId)).webhook_signing_key;
              return rows;
            }
          : Reflect.get(target, property, receiver),
    });
    const racing = new Proxy(db, {
      get: (target, property, receiver) =>
        property === 'webhookSettings' ? settings : Reflect.get(target, property, receiver),
    }) as RelayDb;

    const report = await rewrapSigningKeys(racing, during, 2, { environmentId });
    // The current key read was stale: left alone. The rotation moved it to the previous column, rewrapped.
    expect(report).toMatchObject({
      scanned: 2,
      rewrapped: 1,
      changedConcurrently: 1,
      failed: [],
      remaining: 0,
    });
    expect((await relay(after).forDelivery(environmentId))?.keys).toEqual({
      current: rotated,
      previous: original,
    });
  });

  it('reports a key no configured master key can open, leaves it as it was, and rewraps the rest', async () => {
    const environmentId = newEnvironment();
    const stranger = new EnvelopeCipher(new MasterKeyring(`1:${MasterKeyring.generateKeyMaterial()}`));
    const unreadable = stranger.encrypt('whsec_c3RyYW5nZXI=', keyAad(environmentId));
    await db.webhookSettings.create({
      data: {
        environmentId,
        signingKey: unreadable,
        previousSigningKey: before.encrypt('whsec_cHJldmlvdXM=', keyAad(environmentId)),
        previousKeyExpiresAt: new Date(Date.now() + 60_000),
      },
    });

    const report = await rewrapSigningKeys(db, during, 2, { environmentId });
    expect(report).toEqual({
      currentVersion: 2,
      scanned: 2,
      rewrapped: 1,
      changedConcurrently: 0,
      failed: [`signing:${environmentId}`],
      remaining: 1,
    });
    const row = await db.webhookSettings.findUniqueOrThrow({ where: { environmentId } });
    expect(row.signingKey).toBe(unreadable);
    expect(after.decrypt(row.previousSigningKey!, keyAad(environmentId))).toBe('whsec_cHJldmlvdXM=');
  });
});
