import { randomInt, randomUUID } from 'node:crypto';
import { CryptoError, EnvelopeCipher, MasterKeyring } from '@switchboard/crypto';
import { createPrismaClient, type PrismaClient } from '@switchboard/db';
import { testInfrastructure } from '@switchboard/testing';
import { CredentialsCipher } from '../credentials/credentials-cipher';
import { authEvent } from '../events/auth-event';
import { ConnectionsRepository, type ConnectionKey } from './connections.repository';

/** The vault's SQL against a real Postgres: leases, compare-and-set writes, all-or-nothing metadata. */
describe('ConnectionsRepository (Postgres)', () => {
  let db: PrismaClient;
  let repository: ConnectionsRepository;
  const cipher = new CredentialsCipher(
    new EnvelopeCipher(new MasterKeyring(`1:${MasterKeyring.generateKeyMaterial()}`)),
  );
  // A random environment id keeps this file's rows apart from every other test's.
  const environmentId = randomInt(1_000_000, 2_000_000_000);
  const key = (connectionId: string): ConnectionKey => ({
    environmentId,
    providerConfigKey: 'github',
    connectionId,
  });

  const create = async (
    connectionId: string,
    credentials: Record<string, unknown> = { type: 'OAUTH2', access_token: `at-${connectionId}` },
  ) => {
    const { row } = await repository.upsert(
      key(connectionId),
      {
        provider: 'github',
        sealCredentials: (id) => cipher.seal(id, { type: 'OAUTH2', ...credentials }),
        credentialsExpiresAt: null,
        connectionConfig: {},
        tags: {},
      },
      (r, operation) => authEvent(r, `test-${randomUUID()}`, operation),
    );
    return row;
  };

  beforeAll(async () => {
    // A session time zone far from UTC: lease and expiry times must not depend on it.
    const url = new URL((await testInfrastructure()).databaseUrl);
    url.searchParams.set('options', '-c TimeZone=Pacific/Kiritimati');
    db = createPrismaClient(url.toString(), { poolSize: 30 });
    repository = new ConnectionsRepository(db);
  });

  afterAll(async () => {
    await db.connection.deleteMany({ where: { environmentId } });
    await db.$disconnect();
  });

  it('creates, then overrides the same connection, queueing one event for each', async () => {
    const first = await create('upsert-1');
    const events = await db.outboxEvent.findMany({
      where: { payload: { path: ['connectionId'], equals: 'upsert-1' } },
    });
    const second = await create('upsert-1', { access_token: 'at-2' });
    expect(second.id).toBe(first.id);
    const after = await db.outboxEvent.findMany({
      where: { payload: { path: ['connectionId'], equals: 'upsert-1' } },
    });
    expect(after.length).toBe(events.length + 1);
    expect(cipher.open(second.id, second.credentials!)).toEqual({ type: 'OAUTH2', access_token: 'at-2' });
    await db.outboxEvent.deleteMany({ where: { id: { in: after.map((e) => e.id) } } });
  });

  it("gives a connection's refresh lease to exactly one of many concurrent claimants", async () => {
    const row = await create('lease-1');
    const owners = Array.from({ length: 40 }, (_, i) => `owner-${i}`);
    const results = await Promise.all(
      owners.map((owner) => repository.tryAcquireLease(row.id, owner, 30_000)),
    );
    const winners = results.filter((r) => r !== null);
    expect(winners).toHaveLength(1);
    const until = winners[0]!.refreshLeaseUntil!.getTime();
    // The lease is computed by the database in UTC: about 30 s from now, whatever the session time zone.
    expect(Math.abs(until - (Date.now() + 30_000))).toBeLessThan(5_000);

    // Only the holder can give it back.
    const holder = winners[0]!.refreshLeaseOwner!;
    await repository.releaseLease(row.id, 'someone-else');
    expect(await repository.tryAcquireLease(row.id, 'late', 30_000)).toBeNull();
    await repository.releaseLease(row.id, holder);
    expect(await repository.tryAcquireLease(row.id, 'late', 30_000)).not.toBeNull();
  });

  it('lets another claimant take a lease whose holder did not come back before it ran out', async () => {
    const row = await create('lease-2');
    expect(await repository.tryAcquireLease(row.id, 'dies', 300)).not.toBeNull();
    expect(await repository.tryAcquireLease(row.id, 'next', 300)).toBeNull();
    await new Promise((r) => setTimeout(r, 400));
    expect((await repository.tryAcquireLease(row.id, 'next', 300))?.refreshLeaseOwner).toBe('next');
  });

  it('stores refreshed credentials only over the ciphertext they were refreshed from', async () => {
    const row = await create('cas-1');
    await repository.tryAcquireLease(row.id, 'me', 30_000);
    const next = cipher.seal(row.id, { type: 'OAUTH2', access_token: 'fresh' });
    expect(await repository.saveRefreshed(row.id, 'me', 'sb1.stale', next, null, {})).toBeNull();
    const saved = await repository.saveRefreshed(
      row.id,
      'me',
      row.credentials!,
      next,
      new Date('2030-01-01T00:00:00.000Z'),
      { region: 'eu' },
    );
    expect(saved).toMatchObject({
      refreshLeaseOwner: null,
      refreshLeaseUntil: null,
      refreshFailures: 0,
      connectionConfig: { region: 'eu' },
    });
    expect(saved!.credentialsExpiresAt!.toISOString()).toBe('2030-01-01T00:00:00.000Z');
    expect(cipher.open(row.id, saved!.credentials!)).toEqual({ type: 'OAUTH2', access_token: 'fresh' });
  });

  it('records a failed refresh with its auth error and event in one go, and clears them on the next success', async () => {
    const row = await create('fail-1');
    await repository.tryAcquireLease(row.id, 'me', 30_000);
    const eventId = `test-${randomUUID()}`;
    const failed = await repository.recordRefreshFailure(
      row.id,
      'me',
      { code: 'refresh_token_external_error', message: 'invalid_grant' },
      'log-1',
      authEvent(row, eventId, 'refresh', {
        type: 'refresh_token_external_error',
        description: 'invalid_grant',
      }),
    );
    expect(failed).toMatchObject({
      refreshFailures: 1,
      refreshLeaseOwner: null,
      errors: [{ type: 'auth', log_id: 'log-1' }],
      lastRefreshError: { code: 'refresh_token_external_error', message: 'invalid_grant' },
    });
    expect(await db.outboxEvent.findUnique({ where: { eventId } })).toMatchObject({
      payload: { operation: 'refresh', success: false },
    });

    const again = await repository.recordRefreshFailure(
      row.id,
      'me',
      { code: 'refresh_token_external_error', message: 'x' },
      'log-2',
      authEvent(row, `test-${randomUUID()}`, 'refresh', { type: 'x', description: 'x' }),
    );
    // One auth error at a time: the newest.
    expect(again).toMatchObject({ refreshFailures: 2, errors: [{ type: 'auth', log_id: 'log-2' }] });

    const saved = await repository.saveRefreshed(
      row.id,
      'me',
      row.credentials!,
      cipher.seal(row.id, { type: 'OAUTH2', access_token: 'ok' }),
      null,
      {},
    );
    expect(saved).toMatchObject({
      refreshFailures: 0,
      lastRefreshFailure: null,
      lastRefreshError: null,
      errors: [],
    });
    await db.outboxEvent.deleteMany({ where: { payload: { path: ['connectionId'], equals: 'fail-1' } } });
  });

  it('writes metadata to several connections all or nothing', async () => {
    await create('meta-1');
    await create('meta-2');
    expect(
      await repository.writeMetadata(environmentId, 'github', ['meta-1', 'meta-2'], { a: 1 }, 'replace'),
    ).toEqual([]);
    expect(
      await repository.writeMetadata(
        environmentId,
        'github',
        ['meta-1', 'ghost', 'meta-2'],
        { a: 2 },
        'merge',
      ),
    ).toEqual(['ghost']);
    const rows = await db.connection.findMany({
      where: { environmentId, connectionId: { in: ['meta-1', 'meta-2'] } },
    });
    expect(rows.map((r) => r.metadata)).toEqual([{ a: 1 }, { a: 1 }]);
    expect(await repository.writeMetadata(environmentId, 'github', ['meta-1'], { b: 2 }, 'merge')).toEqual(
      [],
    );
    expect((await repository.findByKey(key('meta-1')))!.metadata).toEqual({ a: 1, b: 2 });
  });

  it('finds connections by a connection_config or metadata path for webhook routing', async () => {
    const row = await create('match-1');
    await db.connection.update({
      where: { id: row.id },
      data: { connectionConfig: { installation: { id: '42' } }, metadata: { team_id: 'T1' } },
    });
    expect(
      (await repository.match(environmentId, 'github', 'connection_config.installation.id', '42')).map(
        (r) => r.connectionId,
      ),
    ).toEqual(['match-1']);
    expect(
      (await repository.match(environmentId, 'github', 'metadata.team_id', 'T1')).map((r) => r.connectionId),
    ).toEqual(['match-1']);
    expect(await repository.match(environmentId, 'github', 'metadata.team_id', 'T2')).toEqual([]);
    expect(
      (await repository.match(environmentId, 'github', 'connection_id', 'match-1')).map((r) => r.id),
    ).toEqual([row.id]);
  });

  it('routes on token-response metadata stored under a flat dotted key (Slack team.id)', async () => {
    const row = await create('match-flat');
    await db.connection.update({
      where: { id: row.id },
      data: { connectionConfig: { 'team.id': 'T0SLACK' } },
    });
    expect(
      (await repository.match(environmentId, 'github', 'connection_config.team.id', 'T0SLACK')).map(
        (r) => r.connectionId,
      ),
    ).toEqual(['match-flat']);
    expect(await repository.match(environmentId, 'github', 'connection_config.team.id', 'T0OTHER')).toEqual(
      [],
    );
  });

  it('binds each ciphertext to its row: one copied to another row does not decrypt', async () => {
    const victim = await create('aad-victim', { access_token: 'victim-token' });
    const attacker = await create('aad-attacker', { access_token: 'attacker-token' });
    await db.connection.update({ where: { id: attacker.id }, data: { credentials: victim.credentials } });
    const copied = (await repository.findById(attacker.id))!.credentials!;
    expect(() => cipher.open(attacker.id, copied)).toThrow(CryptoError);
    expect(() => cipher.open(attacker.id, copied)).toThrow(/another row/);
    expect(cipher.open(victim.id, copied)).toEqual({ type: 'OAUTH2', access_token: 'victim-token' });
  });
});
