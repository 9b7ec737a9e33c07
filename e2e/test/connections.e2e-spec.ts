import { Nango } from '@nangohq/node';
import type { AuthEvent } from '@switchboard/contracts';
import type { Stack } from '@switchboard/testing';
import { waitForAuthEvents } from './support/auth-events';
import { ConnectionsWorld, expectClientError, PLUS_ZERO } from './support/connections-world';
import { call, createKey, expectError, failure } from './support/http';
import { WebhookReceiver } from './support/webhook-receiver';

/**
 * The connections and metadata API through the gateway, driven by the official, unmodified
 * `@nangohq/node` client (and raw HTTP for the import, which the client has no method for).
 */

describe('connections through @nangohq/node 0.71.10', () => {
  const world = new ConnectionsWorld();
  const { gh, keys, run, secrets, secret, api, importConnection } = world;
  let stack: Stack;
  let nango: Nango;

  beforeAll(async () => {
    await world.start();
    ({ stack, nango } = world);
  }, 180_000);

  afterAll(() => world.stop());

  describe('import (POST /connections)', () => {
    it('stores an OAuth 2 connection and answers 201 with the full connection, refresh token withheld', async () => {
      const accessToken = secret('at');
      const refreshToken = secret('rt');
      const expiresAt = new Date(Date.now() + 24 * 3600_000).toISOString();
      const res = await importConnection({
        provider_config_key: gh,
        connection_id: 'imported-1',
        credentials: {
          type: 'OAUTH2',
          access_token: accessToken,
          refresh_token: refreshToken,
          expires_at: expiresAt,
        },
        metadata: { plan: 'pro' },
        connection_config: { subdomain: 'acme' },
        end_user: { id: 'user-1', email: 'ada@example.com', display_name: 'Ada' },
        tags: { Team: 'core', end_user_id: 'user-1' },
      });
      expect(res.status).toBe(201);
      const body = res.body as Record<string, unknown>;
      expect(body).toEqual({
        id: expect.any(Number),
        connection_id: 'imported-1',
        provider_config_key: gh,
        provider: 'github',
        errors: [],
        end_user: {
          id: 'user-1',
          email: 'ada@example.com',
          display_name: 'Ada',
          tags: null,
          organization: null,
        },
        tags: { team: 'core', end_user_id: 'user-1' },
        metadata: { plan: 'pro' },
        connection_config: { subdomain: 'acme' },
        webhook_url_override: null,
        created_at: expect.stringMatching(PLUS_ZERO),
        updated_at: expect.stringMatching(PLUS_ZERO),
        last_fetched_at: null,
        credentials: {
          type: 'OAUTH2',
          access_token: accessToken,
          expires_at: expiresAt,
          raw: { access_token: accessToken, expires_at: expiresAt },
        },
      });
      expect(res.text).not.toContain(refreshToken);
    });

    it('publishes an auth event for the creation, and one for an override when the same id is imported again', async () => {
      const res = await importConnection({
        provider_config_key: keys,
        connection_id: 'key-conn',
        credentials: { type: 'API_KEY', apiKey: secret('key') },
        tags: { env: 'prod' },
      });
      expect(res.status).toBe(201);
      const again = await importConnection({
        provider_config_key: keys,
        connection_id: 'key-conn',
        credentials: { type: 'API_KEY', apiKey: secret('key') },
        tags: { env: 'prod' },
      });
      expect(again.status).toBe(201);
      expect((again.body as { id: number }).id).toBe((res.body as { id: number }).id);

      const mine = (events: AuthEvent[]) =>
        events.filter((e) => e.connectionId === 'key-conn' && e.providerConfigKey === keys);
      const events = mine(await waitForAuthEvents(world.nc, world.startedAt, (all) => mine(all).length >= 2));
      expect(events.map((e) => e.operation)).toEqual(['creation', 'override']);
      for (const event of events) {
        expect(event).toMatchObject({
          provider: 'anthropic',
          success: true,
          tags: { env: 'prod' },
          error: null,
        });
        expect(JSON.stringify(event)).not.toMatch(/SENTINEL/);
      }
    });

    it('generates a connection id when none is given', async () => {
      const res = await importConnection({
        provider_config_key: keys,
        credentials: { type: 'API_KEY', apiKey: secret('key') },
      });
      expect(res.status).toBe(201);
      expect((res.body as { connection_id: string }).connection_id).toMatch(/^[0-9a-f-]{36}$/);
    });

    it('refuses credentials of another auth mode, an unknown integration and unknown fields, storing nothing', async () => {
      const wrongMode = await importConnection({
        provider_config_key: keys,
        connection_id: 'nope-1',
        credentials: { type: 'BASIC', username: 'u', password: 'p' },
      });
      expect(expectError(wrongMode, 400, 'invalid_body').errors).toEqual([
        expect.objectContaining({ path: ['credentials', 'type'] }),
      ]);

      const unknown = await importConnection({
        provider_config_key: 'no-such-integration',
        connection_id: 'nope-2',
        credentials: { type: 'API_KEY', apiKey: 'x' },
      });
      expectError(unknown, 404, 'not_found');

      const extra = await importConnection({
        provider_config_key: keys,
        connection_id: 'nope-3',
        credentials: { type: 'API_KEY', apiKey: 'x', extra: 1 },
      });
      expect(expectError(extra, 400, 'invalid_body').errors).toEqual([
        expect.objectContaining({ path: ['credentials', 'extra'] }),
      ]);

      const tooManyTags = await importConnection({
        provider_config_key: keys,
        connection_id: 'nope-4',
        credentials: { type: 'API_KEY', apiKey: 'x' },
        tags: Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`t${i}`, 'v'])),
      });
      expectError(tooManyTags, 400, 'invalid_body');

      const { rows } = await world.db.query(
        `SELECT count(*)::int AS n FROM vault.connections WHERE connection_id LIKE 'nope-%'`,
      );
      expect(rows[0].n).toBe(0);
    });

    it('stores credentials only as envelope ciphertext bound to the row', async () => {
      const { rows } = await world.db.query(
        `SELECT id, credentials FROM vault.connections WHERE connection_id = 'imported-1' AND provider_config_key = $1`,
        [gh],
      );
      expect(rows[0].credentials).toMatch(/^sb1\.\d+\./);
      for (const value of secrets) expect(rows[0].credentials).not.toContain(value);
    });
  });

  describe('list (GET /connections)', () => {
    beforeAll(() => world.importListConnections());

    it('lists newest first with created, tags, errors, end_user and metadata, and never credentials', async () => {
      const { connections } = await nango.listConnections();
      const ids = connections.map((c) => c.connection_id);
      expect(ids.indexOf('list-c')).toBeLessThan(ids.indexOf('list-b'));
      expect(ids.indexOf('list-b')).toBeLessThan(ids.indexOf('list-a'));
      const c = connections.find((x) => x.connection_id === 'list-c')!;
      expect(c).toEqual({
        id: expect.any(Number),
        connection_id: 'list-c',
        provider_config_key: keys,
        provider: 'anthropic',
        errors: [],
        end_user: {
          id: 'u-c',
          display_name: 'Person u-c',
          email: 'u-c@example.com',
          tags: null,
          organization: { id: 'org-2', display_name: null },
        },
        tags: { plan: 'pro', region: 'us' },
        metadata: null,
        created: expect.stringMatching(PLUS_ZERO),
      });
      const text = JSON.stringify(connections);
      for (const value of secrets) expect(text).not.toContain(value);
    });

    it('filters by connection id, integrations, end user, organization, tags and search', async () => {
      const ids = (r: { connections: { connection_id: string }[] }) =>
        r.connections.map((c) => c.connection_id).sort();
      expect(ids(await nango.listConnections({ connectionId: 'list-b' }))).toEqual(['list-b']);
      expect(ids(await nango.listConnections({ integrationId: [keys, 'other'], userId: 'u-a' }))).toEqual([
        'list-a',
      ]);
      expect(ids(await nango.listConnections({ integrationId: gh }))).toEqual(['imported-1']);
      expect(
        ids(await nango.listConnections(undefined, undefined, { endUserOrganizationId: 'org-1' })),
      ).toEqual(['list-a', 'list-b']);
      expect(ids(await nango.listConnections({ tags: { PLAN: 'pro' } }))).toEqual(['list-b', 'list-c']);
      expect(ids(await nango.listConnections({ tags: { plan: 'pro', region: 'eu' } }))).toEqual(['list-b']);
      expect(ids(await nango.listConnections(undefined, 'PERSON U-'))).toEqual([
        'list-a',
        'list-b',
        'list-c',
      ]);
      expect(ids(await nango.listConnections(undefined, 'u-b@example'))).toEqual(['list-b']);
      // `%` and `_` are plain characters in a search, not wildcards.
      expect(ids(await nango.listConnections(undefined, '%'))).toEqual([]);
    });

    it('pages with limit and page', async () => {
      const all = (await nango.listConnections()).connections.map((c) => c.connection_id);
      expect(all.length).toBeGreaterThan(4);
      const first = await nango.listConnections(undefined, undefined, { limit: 2 });
      const second = await nango.listConnections(undefined, undefined, { limit: 2, page: 1 });
      expect([...first.connections, ...second.connections].map((c) => c.connection_id)).toEqual(
        all.slice(0, 4),
      );
    });

    it('refuses unknown parameters and out-of-range limits', async () => {
      for (const query of ['foo=1', 'limit=0', 'limit=2001', 'page=-1']) {
        expectError(await api('GET', `/connections?${query}`), 400, 'invalid_query_params');
      }
    });

    it("is what waitForConnection polls to find an end user's connection", async () => {
      const found = await nango.waitForConnection(keys, 'u-b');
      expect(found).toMatchObject({ connection_id: 'list-b', provider_config_key: keys });
    }, 30_000);
  });

  describe('get (GET /connections/:id)', () => {
    it('returns credentials with refresh tokens stripped at every depth unless refresh_token=true', async () => {
      const accessToken = secret('at');
      const refreshToken = secret('rt');
      const res = await importConnection({
        provider_config_key: gh,
        connection_id: 'with-raw',
        credentials: {
          type: 'OAUTH2',
          access_token: accessToken,
          refresh_token: refreshToken,
          raw: { access_token: accessToken, refresh_token: refreshToken, nested: { refreshToken } },
        },
      });
      expect(res.status).toBe(201);

      const connection = await nango.getConnection(gh, 'with-raw');
      expect(connection.credentials).toEqual({
        type: 'OAUTH2',
        access_token: accessToken,
        raw: { access_token: accessToken, nested: {} },
      });
      expect(connection.last_fetched_at).toMatch(PLUS_ZERO);
      expect(await nango.getToken(gh, 'with-raw')).toBe(accessToken);
      expect(await nango.getRawTokenResponse(gh, 'with-raw')).toEqual({
        access_token: accessToken,
        nested: {},
      });

      const full = await nango.getConnection(gh, 'with-raw', false, true);
      expect(full.credentials).toMatchObject({
        refresh_token: refreshToken,
        raw: { refresh_token: refreshToken, nested: { refreshToken } },
      });
    });

    it('returns the whole credentials object from getToken for non-OAuth connections', async () => {
      const apiKey = secret('key');
      await importConnection({
        provider_config_key: keys,
        connection_id: 'token-key',
        credentials: { type: 'API_KEY', apiKey },
      });
      expect(await nango.getToken(keys, 'token-key')).toEqual({ type: 'API_KEY', apiKey });
    });

    it('answers not_found for an unknown connection and unknown_provider_config for an unknown integration', async () => {
      await expectClientError(nango.getConnection(gh, 'does-not-exist'), 404, 'not_found');
      await expectClientError(
        nango.getConnection('no-such-integration', 'x'),
        404,
        'unknown_provider_config',
      );
    });

    it('requires provider_config_key and refuses malformed booleans', async () => {
      expectError(await api('GET', '/connections/imported-1'), 400, 'invalid_query_params');
      expectError(
        await api('GET', `/connections/imported-1?provider_config_key=${gh}&force_refresh=maybe`),
        400,
        'invalid_query_params',
      );
      const ok = await api(
        'GET',
        `/connections/imported-1?provider_config_key=${gh}&force_refresh=no&refresh_token=0`,
      );
      expect(ok.status).toBe(200);
    });
  });

  describe('secret connection-config fields', () => {
    it("seals Datadog's applicationKey with the credentials: not in the row, redacted without read_credentials, injected by the proxy", async () => {
      const dd = `dd-${run}`;
      await nango.createIntegration({ provider: 'datadog', unique_key: dd });
      const applicationKey = secret('ddapp');
      const apiKey = secret('ddapi');
      const imported = await importConnection({
        provider_config_key: dd,
        connection_id: 'dd-1',
        credentials: { type: 'API_KEY', apiKey },
        connection_config: { siteParameter: 'datadoghq.eu', applicationKey },
      });
      expect(imported.status).toBe(201);
      expect((imported.body as { connection_config: unknown }).connection_config).toEqual({
        siteParameter: 'datadoghq.eu',
        applicationKey,
      });

      // At rest: neither the config column nor any other column holds it in plain text.
      const { rows } = await world.db.query<{ row: string; config: Record<string, unknown> }>(
        `SELECT c::text AS row, connection_config AS config FROM vault.connections c
          WHERE provider_config_key = $1 AND connection_id = 'dd-1'`,
        [dd],
      );
      expect(rows).toHaveLength(1);
      expect(rows[0]!.config).toEqual({ siteParameter: 'datadoghq.eu' });
      expect(rows[0]!.row).not.toContain(applicationKey);

      // connections:read alone: the field is left out of the view.
      const reader = await createKey(
        stack.gatewayUrl,
        stack.secretKey,
        ['environment:connections:read'],
        'dd reader',
      );
      const redacted = await call(stack.gatewayUrl, 'GET', `/connections/dd-1?provider_config_key=${dd}`, {
        key: reader,
      });
      expect(redacted.status).toBe(200);
      expect((redacted.body as { connection_config: unknown }).connection_config).toEqual({
        siteParameter: 'datadoghq.eu',
      });
      expect(redacted.text).not.toContain(applicationKey);
      const listed = await call(stack.gatewayUrl, 'GET', `/connections?connectionId=dd-1`, { key: reader });
      expect(listed.status).toBe(200);
      expect(listed.text).not.toContain(applicationKey);

      // With read_credentials it is shown, and the proxy still sends it to the provider.
      const full = await nango.getConnection(dd, 'dd-1');
      expect(full.connection_config).toEqual({ siteParameter: 'datadoghq.eu', applicationKey });
      const provider = await new WebhookReceiver().start();
      try {
        await nango.get({
          providerConfigKey: dd,
          connectionId: 'dd-1',
          endpoint: '/v1/validate',
          baseUrlOverride: provider.url,
        });
        expect(provider.received[0]!.headers).toMatchObject({
          'dd-api-key': apiKey,
          'dd-application-key': applicationKey,
        });
      } finally {
        await provider.stop();
      }
    });
  });

  describe('scopes', () => {
    it('shows no credentials to a key without read_credentials, and refuses it forced refreshes and refresh tokens', async () => {
      const readOnly = await createKey(
        stack.gatewayUrl,
        stack.secretKey,
        ['environment:connections:read'],
        'connections reader',
      );
      const client = new Nango({ secretKey: readOnly, host: stack.gatewayUrl });
      const connection = await client.getConnection(gh, 'imported-1');
      expect(connection.credentials).toEqual({});
      expect(connection.metadata).toEqual({ plan: 'pro' });
      expect(await client.getMetadata(gh, 'imported-1')).toEqual({ plan: 'pro' });
      expect((await client.listConnections({ connectionId: 'imported-1' })).connections).toHaveLength(1);

      for (const forced of [
        client.getConnection(gh, 'imported-1', true),
        client.getConnection(gh, 'imported-1', false, true),
      ]) {
        await expectClientError(forced, 403, 'forbidden');
      }
      expect(
        (
          await failure(
            client.patchConnection(
              { connectionId: 'imported-1', provider_config_key: gh },
              { tags: { a: 'b' } },
            ),
          )
        ).status,
      ).toBe(403);
      expect((await failure(client.deleteConnection(gh, 'imported-1'))).status).toBe(403);
      expect((await failure(client.setMetadata(gh, 'imported-1', { x: 1 }))).status).toBe(403);
    });

    it('lets a write-only key import without seeing the stored credentials in the answer', async () => {
      const writer = await createKey(
        stack.gatewayUrl,
        stack.secretKey,
        ['environment:connections:write'],
        'connections writer',
      );
      const res = await importConnection(
        {
          provider_config_key: keys,
          connection_id: 'by-writer',
          credentials: { type: 'API_KEY', apiKey: secret('key') },
        },
        writer,
      );
      expect(res.status).toBe(201);
      expect((res.body as { credentials: unknown }).credentials).toEqual({});
      expectError(await call(stack.gatewayUrl, 'GET', '/connections', { key: writer }), 403, 'forbidden');
    });
  });

  describe('patch (PATCH /connections/:id)', () => {
    it('replaces tags (keys lower-cased), sets the end user and the webhook URL override, and clears it with ""', async () => {
      const ok = await nango.patchConnection(
        { connectionId: 'list-a', provider_config_key: keys },
        {
          tags: { Tier: 'gold' },
          end_user: { id: 'u-a2', email: 'new@example.com' },
          webhook_url_override: 'https://hooks.example.com/a',
        },
      );
      expect(ok).toEqual({ success: true });
      let connection = await nango.getConnection(keys, 'list-a');
      expect(connection).toMatchObject({
        tags: { tier: 'gold' },
        end_user: { id: 'u-a2', email: 'new@example.com', display_name: null },
        webhook_url_override: 'https://hooks.example.com/a',
      });

      await nango.patchConnection(
        { connectionId: 'list-a', provider_config_key: keys },
        { webhook_url_override: '' },
      );
      connection = await nango.getConnection(keys, 'list-a');
      expect(connection.webhook_url_override).toBeNull();
      expect(connection.tags).toEqual({ tier: 'gold' });
    });

    it('refuses unknown fields and bad URLs, and answers not_found for an unknown connection', async () => {
      const patch = (body: unknown, id = 'list-a') =>
        api('PATCH', `/connections/${id}?provider_config_key=${keys}`, body);
      expectError(await patch({ metadata: {} }), 400, 'invalid_body');
      expectError(await patch({ webhook_url_override: 'ftp://example.com' }), 400, 'invalid_body');
      expectError(await patch({ tags: { '1bad': 'x' } }), 400, 'invalid_body');
      expectError(await patch({ tags: {} }, 'missing-conn'), 404, 'not_found');
      expectError(await api('PATCH', '/connections/list-a', {}), 400, 'invalid_query_params');
    });
  });

  describe('metadata', () => {
    it('sets (201, echo), reads and merges (200, echo) metadata', async () => {
      const set = await nango.setMetadata(keys, 'list-b', { crm: 'hubspot', nested: { a: 1 } });
      expect(set.status).toBe(201);
      expect(set.data).toEqual({
        metadata: { crm: 'hubspot', nested: { a: 1 } },
        connection_id: 'list-b',
        provider_config_key: keys,
      });
      expect(await nango.getMetadata(keys, 'list-b')).toEqual({ crm: 'hubspot', nested: { a: 1 } });

      const update = await nango.updateMetadata(keys, 'list-b', { nested: { b: 2 }, extra: true });
      expect(update.status).toBe(200);
      expect(update.data).toEqual({
        metadata: { nested: { b: 2 }, extra: true },
        connection_id: 'list-b',
        provider_config_key: keys,
      });
      // A shallow merge: top-level keys replace, untouched ones stay.
      expect(await nango.getMetadata(keys, 'list-b')).toEqual({
        crm: 'hubspot',
        nested: { b: 2 },
        extra: true,
      });

      await nango.setMetadata(keys, 'list-b', { only: 'this' });
      expect(await nango.getMetadata(keys, 'list-b')).toEqual({ only: 'this' });
    });

    it('writes several connections at once, and none when one of them does not exist', async () => {
      await nango.setMetadata(keys, ['list-a', 'list-c'], { batch: 1 });
      expect(await nango.getMetadata(keys, 'list-a')).toEqual({ batch: 1 });
      expect(await nango.getMetadata(keys, 'list-c')).toEqual({ batch: 1 });

      const refused = await failure(nango.updateMetadata(keys, ['list-a', 'ghost', 'list-c'], { batch: 2 }));
      expect(refused.status).toBe(404);
      expect(refused.data).toEqual({
        error: { code: 'unknown_connection', message: expect.stringContaining('"ghost"') },
      });
      expect(await nango.getMetadata(keys, 'list-a')).toEqual({ batch: 1 });
      expect(await nango.getMetadata(keys, 'list-c')).toEqual({ batch: 1 });

      await expectClientError(nango.setMetadata(keys, 'ghost', { x: 1 }), 404, 'unknown_connection');
    });

    it('refuses a body that is not { metadata, connection_id, provider_config_key }', async () => {
      for (const body of [
        { connection_id: 'list-a', provider_config_key: keys },
        { connection_id: 'list-a', provider_config_key: keys, metadata: [1] },
        { connection_id: [], provider_config_key: keys, metadata: {} },
        { connection_id: 'list-a', provider_config_key: keys, metadata: {}, other: 1 },
      ]) {
        expectError(await api('POST', '/connections/metadata', body), 400, 'invalid_body');
      }
    });
  });

  describe('delete (DELETE /connections/:id)', () => {
    it('deletes a connection; deleting it again answers unknown_connection', async () => {
      const res = await nango.deleteConnection(keys, 'list-c');
      expect({ status: res.status, data: res.data }).toEqual({ status: 200, data: { success: true } });
      expect((await failure(nango.getConnection(keys, 'list-c'))).status).toBe(404);
      const again = await failure(nango.deleteConnection(keys, 'list-c'));
      expect(again.data).toEqual({ error: expect.objectContaining({ code: 'unknown_connection' }) });
    });
  });

  describe('credentials are bound to their row', () => {
    it('refuses to decrypt a ciphertext copied into another connection, without leaking either', async () => {
      const victimToken = secret('at');
      await importConnection({
        provider_config_key: gh,
        connection_id: 'victim',
        credentials: { type: 'OAUTH2', access_token: victimToken },
      });
      await importConnection({
        provider_config_key: gh,
        connection_id: 'attacker',
        credentials: { type: 'OAUTH2', access_token: secret('at') },
      });
      await world.db.query(
        `UPDATE vault.connections SET credentials = (SELECT credentials FROM vault.connections WHERE provider_config_key = $1 AND connection_id = 'victim')
         WHERE provider_config_key = $1 AND connection_id = 'attacker'`,
        [gh],
      );
      const stolen = await api('GET', `/connections/attacker?provider_config_key=${gh}`);
      expectError(stolen, 500, 'server_error');
      expect(stolen.text).not.toContain(victimToken);
      expect(await nango.getToken(gh, 'victim')).toBe(victimToken);
    });
  });

  describe('secrets hygiene', () => {
    it('never writes a credential to any service log', () => {
      expect(secrets.length).toBeGreaterThan(10);
      for (const service of Object.keys(stack.services) as (keyof Stack['services'])[]) {
        const logs = stack.logs(service);
        for (const value of secrets) expect(logs).not.toContain(value);
      }
    });
  });
});
