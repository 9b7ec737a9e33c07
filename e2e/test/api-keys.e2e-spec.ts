import { createHash, randomUUID } from 'node:crypto';
import { ALL_SCOPES } from '@switchboard/contracts';
import type { Stack } from '@switchboard/testing';
import { Client } from 'pg';
import { call, createKey, expectError } from './support/http';
import { START_HOOK_TIMEOUT_MS, waitFor } from './support/processes';
import { standardStack } from './support/standard-stack';

/** Scoped API keys: what the seed key holds, what a new key may hold, and that scopes are enforced. */

const ISSUE_SCOPES = [
  'environment:integrations:read',
  'environment:integrations:read_credentials',
  'environment:connect_sessions:write',
  'environment:syncs:update',
  'environment:functions:read',
];

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

describe('API keys and scopes', () => {
  let stack: Stack;
  let db: Client;
  const post = (body: unknown, key = stack.secretKey) =>
    call(stack.gatewayUrl, 'POST', '/environment/api-keys', { key, body });
  const keyCount = async () =>
    Number(
      (
        await db.query(
          'select count(*) from auth.api_keys k join auth.environments e on e.id = k.environment_id where e.uuid = $1',
          [stack.environmentUuid],
        )
      ).rows[0].count,
    );

  beforeAll(async () => {
    // A short key cache so a revocation shows within the test.
    stack = await standardStack();
    db = new Client({ connectionString: stack.databaseUrl });
    await db.connect();
  }, START_HOOK_TIMEOUT_MS);
  afterAll(async () => {
    await db?.end();
    await stack?.stop();
  });

  it('the seed key holds every scope, among them those the foundation names', async () => {
    const hash = createHash('sha256').update(stack.secretKey).digest('hex');
    const { rows } = await db.query('select * from auth.api_keys where key_hash = $1', [hash]);
    expect(rows).toHaveLength(1);
    expect(rows[0].scopes).toEqual(expect.arrayContaining(ISSUE_SCOPES));
    expect([...rows[0].scopes].sort()).toEqual([...ALL_SCOPES].sort());
    // Only the hash is stored, never the key.
    expect(JSON.stringify(rows[0])).not.toContain(stack.secretKey);
  });

  it.each(ISSUE_SCOPES)(
    'creates a key with %s alone; it authenticates and holds exactly that scope',
    async (scope) => {
      const res = await post({ display_name: `only ${scope}`, scopes: [scope] });
      expect(res.status).toBe(201);
      const data = (
        res.body as { data: { id: number; scopes: string[]; secret_key: string; display_name: string } }
      ).data;
      expect(data).toMatchObject({ display_name: `only ${scope}`, scopes: [scope], id: expect.any(Number) });
      expect(data.secret_key).toMatch(UUID_V4);

      const list = await call(stack.gatewayUrl, 'GET', '/integrations', { key: data.secret_key });
      if (scope === 'environment:integrations:read') expect(list.status).toBe(200);
      else expect(expectError(list, 403, 'forbidden').message).toContain('environment:integrations:read');
    },
  );

  it('read_credentials does not imply read; both together reveal the secret', async () => {
    const secret = `cs-${randomUUID()}`;
    await call(stack.gatewayUrl, 'POST', '/integrations', {
      key: stack.secretKey,
      body: {
        provider: 'github',
        unique_key: 'gh',
        credentials: { type: 'OAUTH2', client_id: 'id', client_secret: secret },
      },
    });
    const credentialsOnly = await createKey(stack.gatewayUrl, stack.secretKey, [
      'environment:integrations:read_credentials',
    ]);
    const refused = await call(stack.gatewayUrl, 'GET', '/integrations/gh?include=credentials', {
      key: credentialsOnly,
    });
    expect(expectError(refused, 403, 'forbidden').message).toContain('environment:integrations:read');

    const both = await createKey(stack.gatewayUrl, stack.secretKey, [
      'environment:integrations:read',
      'environment:integrations:read_credentials',
    ]);
    const res = await call(stack.gatewayUrl, 'GET', '/integrations/gh?include=credentials', { key: both });
    expect(res.status).toBe(200);
    expect(
      (res.body as { data: { credentials: { client_secret: string } } }).data.credentials.client_secret,
    ).toBe(secret);
  });

  it('400 invalid_body for an unknown scope, an empty list or an unknown field; no key created', async () => {
    const before = await keyCount();
    const unknown = expectError(
      await post({ display_name: 'x', scopes: ['environment:integrations:read', 'environment:everything'] }),
      400,
      'invalid_body',
    );
    expect(unknown.errors).toEqual([expect.objectContaining({ path: ['scopes', 1] })]);
    expectError(await post({ display_name: 'x', scopes: [] }), 400, 'invalid_body');
    const extra = expectError(
      await post({ display_name: 'x', scopes: ['environment:integrations:read'], admin: true }),
      400,
      'invalid_body',
    );
    expect(extra.errors).toEqual([expect.objectContaining({ path: ['admin'] })]);
    expect(await keyCount()).toBe(before);
  });

  it('a key can hand out only scopes it holds itself', async () => {
    const limited = await createKey(stack.gatewayUrl, stack.secretKey, [
      'environment:api_keys:write',
      'environment:integrations:read',
    ]);
    const before = await keyCount();
    const refused = await post(
      {
        display_name: 'escalation',
        scopes: ['environment:integrations:read', 'environment:integrations:write'],
      },
      limited,
    );
    expect(expectError(refused, 403, 'forbidden').message).toContain('environment:integrations:write');
    expect(await keyCount()).toBe(before);

    expect(
      (await post({ display_name: 'narrower', scopes: ['environment:integrations:read'] }, limited)).status,
    ).toBe(201);
  });

  it('a revoked key stops working', async () => {
    const res = await post({ display_name: 'to revoke', scopes: ['environment:integrations:read'] });
    const { id, secret_key: key } = (res.body as { data: { id: number; secret_key: string } }).data;
    expect((await call(stack.gatewayUrl, 'GET', '/integrations', { key })).status).toBe(200);

    const revoked = await call(stack.gatewayUrl, 'DELETE', `/environment/api-keys/${id}`, {
      key: stack.secretKey,
    });
    expect({ status: revoked.status, body: revoked.body }).toEqual({ status: 200, body: { success: true } });
    const refused = await waitFor(
      'the revoked key to be refused',
      async () => {
        const r = await call(stack.gatewayUrl, 'GET', '/integrations', { key });
        return r.status === 401 ? r : undefined;
      },
      5_000,
    );
    expectError(refused, 401, 'unknown_account');
    expectError(
      await call(stack.gatewayUrl, 'DELETE', `/environment/api-keys/${id}`, { key: stack.secretKey }),
      404,
      'not_found',
    );
  });
  it('a key revokes only keys within its own scopes, and the last key that can manage keys is kept', async () => {
    const idOf = async (secret: string) =>
      Number(
        (
          await db.query('select id from auth.api_keys where key_hash = $1', [
            createHash('sha256').update(secret).digest('hex'),
          ])
        ).rows[0].id,
      );
    const revoke = (id: number, key: string) =>
      call(stack.gatewayUrl, 'DELETE', `/environment/api-keys/${id}`, { key });
    const seedId = await idOf(stack.secretKey);

    const narrow = await createKey(stack.gatewayUrl, stack.secretKey, [
      'environment:api_keys:write',
      'environment:integrations:read',
    ]);
    const refused = expectError(await revoke(seedId, narrow), 403, 'forbidden');
    expect(refused.message).toContain('environment:integrations:write');
    expect((await call(stack.gatewayUrl, 'GET', '/integrations', { key: stack.secretKey })).status).toBe(200);

    const reader = await createKey(stack.gatewayUrl, narrow, ['environment:integrations:read']);
    expect((await revoke(await idOf(reader), narrow)).status).toBe(200);

    // Every other key that can manage keys goes; then the seed key is the environment's last one.
    const { rows } = await db.query(
      `select k.id from auth.api_keys k join auth.environments e on e.id = k.environment_id
        where e.uuid = $1 and k.revoked_at is null and 'environment:api_keys:write' = any(k.scopes) and k.id <> $2`,
      [stack.environmentUuid, seedId],
    );
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect((await revoke(Number(row.id), stack.secretKey)).status).toBe(200);
    const last = expectError(await revoke(seedId, stack.secretKey), 409, 'conflict');
    expect(last.message).toContain('environment:api_keys:write');
    expect((await call(stack.gatewayUrl, 'GET', '/integrations', { key: stack.secretKey })).status).toBe(200);
    expect(
      (await db.query('select revoked_at from auth.api_keys where id = $1', [seedId])).rows[0].revoked_at,
    ).toBeNull();
  });
});
