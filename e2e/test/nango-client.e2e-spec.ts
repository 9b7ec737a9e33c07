import { execFile } from 'node:child_process';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Nango } from '@nangohq/node';
import { repoRoot, type Stack } from '@switchboard/testing';
import { Client } from 'pg';
import { call, failure } from './support/http';
import { START_HOOK_TIMEOUT_MS } from './support/processes';
import { standardStack } from './support/standard-stack';

/**
 * The official, unmodified `@nangohq/node` client pointed at Switchboard: every provider, integration
 * and environment-variable operation of the foundation, as a backend migrating from Nango uses them.
 */

const run = promisify(execFile);

describe('@nangohq/node 0.71.10 against Switchboard', () => {
  let stack: Stack;
  let nango: Nango;
  let db: Client;

  const clientSecret = `cs-${randomUUID()}`;
  const webhookSecret = `whs-${randomUUID()}`;
  const privateKey = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
  }).privateKey;

  beforeAll(async () => {
    stack = await standardStack();
    nango = new Nango({ secretKey: stack.secretKey, host: stack.gatewayUrl });
    db = new Client({ connectionString: stack.databaseUrl });
    await db.connect();
  }, START_HOOK_TIMEOUT_MS);

  afterAll(async () => {
    await db?.end();
    await stack?.stop();
  });

  describe('providers', () => {
    it('lists providers matching a search, each with its name and a logo URL on this server', async () => {
      const { data } = await nango.listProviders({ search: 'github' });
      const names = data.map((p) => p.name);
      expect(names).toEqual(expect.arrayContaining(['github', 'github-app']));
      for (const name of names) expect(name).toMatch(/github/i);
      const github = data.find((p) => p.name === 'github')!;
      expect(github).toMatchObject({
        display_name: 'GitHub',
        auth_mode: 'OAUTH2',
        logo_url: `${stack.gatewayUrl}/images/template-logos/github.svg`,
      });

      const all = await nango.listProviders({});
      expect(all.data.length).toBeGreaterThan(data.length);
      expect((await nango.listProviders({ search: 'no-such-provider-anywhere' })).data).toEqual([]);
    });

    it('gets one provider, and answers 404 not_found for an unknown one', async () => {
      const { data } = await nango.getProvider({ provider: 'github-app' });
      expect(data).toMatchObject({ name: 'github-app', auth_mode: 'APP', display_name: expect.any(String) });

      const missing = await failure(nango.getProvider({ provider: 'no-such-provider' }));
      expect(missing).toEqual({
        status: 404,
        data: { error: expect.objectContaining({ code: 'not_found' }) },
      });
    });

    it("lists a provider's function templates (ours for github), none for most, 404 for an unknown provider", async () => {
      const github = await nango.getProviderTemplates({ provider: 'github' });
      expect(github.data.map((t) => `${t.type}:${t.name}`).sort()).toEqual([
        'action:create-issue',
        'sync:issues',
      ]);
      expect(github.data.find((t) => t.name === 'create-issue')).toMatchObject({
        type: 'action',
        input: 'CreateGithubIssue',
        returns: ['GithubIssue'],
        json_schema: { definitions: expect.objectContaining({ CreateGithubIssue: expect.any(Object) }) },
      });
      expect(await nango.getProviderTemplates({ provider: 'linear' })).toEqual({ data: [] });
      const missing = await failure(nango.getProviderTemplates({ provider: 'no-such-provider' }));
      expect(missing.status).toBe(404);
    });
  });

  describe('integrations', () => {
    it('starts with no integrations', async () => {
      expect(await nango.listIntegrations()).toEqual({ configs: [] });
    });

    it('creates an OAuth2 integration and answers without its secret', async () => {
      const res = await nango.createIntegration({
        provider: 'github',
        unique_key: 'github-main',
        display_name: 'GitHub (main)',
        credentials: {
          type: 'OAUTH2',
          client_id: 'client-id-123',
          client_secret: clientSecret,
          scopes: 'repo,user:email',
          webhook_secret: webhookSecret,
        },
      });
      expect(res.data).toMatchObject({
        unique_key: 'github-main',
        provider: 'github',
        display_name: 'GitHub (main)',
        logo: `${stack.gatewayUrl}/images/template-logos/github.svg`,
        forward_webhooks: true,
      });
      expect(new Date(res.data.created_at).toISOString()).toBe(res.data.created_at);
      expect(new Date(res.data.updated_at).toISOString()).toBe(res.data.updated_at);
      expect(JSON.stringify(res)).not.toContain(clientSecret);
    });

    it('creates a GitHub App integration with an RSA private key', async () => {
      expect(privateKey).toContain('-----BEGIN RSA PRIVATE KEY-----');
      const res = await nango.createIntegration({
        provider: 'github-app',
        unique_key: 'github-app',
        credentials: {
          type: 'APP',
          app_id: '424242',
          app_link: 'https://github.com/apps/switchboard-e2e',
          private_key: privateKey,
        },
      });
      // No display name given: the provider's own.
      expect(res.data).toMatchObject({
        unique_key: 'github-app',
        provider: 'github-app',
        display_name: 'GitHub (App)',
      });
      expect(JSON.stringify(res)).not.toContain('PRIVATE KEY');
    });

    it('creates an integration for an API-key provider without credentials', async () => {
      const provider = await nango.getProvider({ provider: 'anthropic' });
      expect(provider.data.auth_mode).toBe('API_KEY');
      const res = await nango.createIntegration({ provider: 'anthropic', unique_key: 'anthropic' });
      expect(res.data).toMatchObject({ unique_key: 'anthropic', provider: 'anthropic' });
    });

    it('refuses a duplicate unique key and an unknown provider with 400 invalid_body', async () => {
      const duplicate = await failure(
        nango.createIntegration({ provider: 'github', unique_key: 'github-main' }),
      );
      expect(duplicate.status).toBe(400);
      expect(duplicate.data).toMatchObject({ error: { code: 'invalid_body' } });

      const unknown = await failure(
        nango.createIntegration({ provider: 'no-such-provider', unique_key: 'nope' }),
      );
      expect(unknown).toEqual({
        status: 400,
        data: {
          error: expect.objectContaining({
            code: 'invalid_body',
            errors: [expect.objectContaining({ path: ['provider'] })],
          }),
        },
      });
    });

    it('lists the integrations as { configs }, oldest first, without secrets', async () => {
      const res = await nango.listIntegrations();
      expect(res.configs.map((c) => c.unique_key)).toEqual(['github-main', 'github-app', 'anthropic']);
      for (const config of res.configs) {
        expect(config).not.toHaveProperty('credentials');
        expect(config).not.toHaveProperty('webhook_url');
      }
      expect(JSON.stringify(res)).not.toContain(clientSecret);
    });

    it('gets an integration with its webhook URL', async () => {
      const { data } = await nango.getIntegration({ uniqueKey: 'github-main' }, { include: ['webhook'] });
      expect(data.webhook_url).toBe(`${stack.gatewayUrl}/webhook/${stack.environmentUuid}/github-main`);
      expect(data).not.toHaveProperty('credentials');
    });

    it('gets an integration with its credentials: the secrets round-trip', async () => {
      const oauth = await nango.getIntegration({ uniqueKey: 'github-main' }, { include: ['credentials'] });
      expect(oauth.data.credentials).toEqual({
        type: 'OAUTH2',
        client_id: 'client-id-123',
        client_secret: clientSecret,
        scopes: 'repo,user:email',
        webhook_secret: webhookSecret,
      });
      expect(oauth.data).not.toHaveProperty('webhook_url');

      const app = await nango.getIntegration({ uniqueKey: 'github-app' }, { include: ['credentials'] });
      expect(app.data.credentials).toEqual({
        type: 'APP',
        app_id: '424242',
        app_link: 'https://github.com/apps/switchboard-e2e',
        private_key: privateKey,
      });

      const apiKey = await nango.getIntegration({ uniqueKey: 'anthropic' }, { include: ['credentials'] });
      expect(apiKey.data.credentials).toBeNull();
    });

    it('stores no secret in plaintext', async () => {
      const { rows } = await db.query(
        'select i.* from auth.integrations i join auth.environments e on e.id = i.environment_id where e.uuid = $1',
        [stack.environmentUuid],
      );
      expect(rows).toHaveLength(3);
      const keyBody = privateKey.split('\n')[5]!; // a line of the key's base64, not its header
      for (const row of rows) {
        for (const value of Object.values(row)) {
          const text = value instanceof Date ? value.toISOString() : (JSON.stringify(value) ?? '');
          expect(text).not.toContain(clientSecret);
          expect(text).not.toContain(webhookSecret);
          expect(text).not.toContain(keyBody);
        }
      }
    });

    it('updates only the fields passed', async () => {
      const before = (await nango.getIntegration({ uniqueKey: 'github-main' }, { include: ['credentials'] }))
        .data;
      const res = await nango.updateIntegration(
        { uniqueKey: 'github-main' },
        { display_name: 'GitHub (renamed)' },
      );
      expect(res.data).toMatchObject({
        unique_key: 'github-main',
        display_name: 'GitHub (renamed)',
        forward_webhooks: true,
        created_at: before.created_at,
      });

      await nango.updateIntegration({ uniqueKey: 'github-main' }, { forward_webhooks: false });
      const after = (await nango.getIntegration({ uniqueKey: 'github-main' }, { include: ['credentials'] }))
        .data;
      expect(after).toMatchObject({ display_name: 'GitHub (renamed)', forward_webhooks: false });
      expect(after.credentials).toEqual(before.credentials);
    });

    it('replaces credentials when given', async () => {
      const newSecret = `cs2-${randomUUID()}`;
      await nango.updateIntegration(
        { uniqueKey: 'github-main' },
        {
          credentials: {
            type: 'OAUTH2',
            client_id: 'client-id-456',
            client_secret: newSecret,
            scopes: 'repo',
          },
        },
      );
      const { data } = await nango.getIntegration({ uniqueKey: 'github-main' }, { include: ['credentials'] });
      expect(data.credentials).toMatchObject({
        client_id: 'client-id-456',
        client_secret: newSecret,
        scopes: 'repo',
      });
      expect(data.display_name).toBe('GitHub (renamed)');
    });

    it('renames an integration that has no connections; the old key is gone', async () => {
      const res = await nango.updateIntegration(
        { uniqueKey: 'github-main' },
        { unique_key: 'github-renamed' },
      );
      expect(res.data).toMatchObject({ unique_key: 'github-renamed', display_name: 'GitHub (renamed)' });

      const renamed = await nango.getIntegration(
        { uniqueKey: 'github-renamed' },
        { include: ['credentials'] },
      );
      expect(renamed.data.credentials).toMatchObject({ type: 'OAUTH2', client_id: 'client-id-456' });
      const old = await failure(nango.getIntegration({ uniqueKey: 'github-main' }));
      expect(old).toEqual({ status: 404, data: { error: expect.objectContaining({ code: 'not_found' }) } });
    });

    it('deletes an integration: { success: true }, then 404 not_found', async () => {
      const res = await nango.deleteIntegration('github-renamed');
      expect(res.status).toBe(200);
      expect(res.data).toEqual({ success: true });

      const gone = await failure(nango.getIntegration({ uniqueKey: 'github-renamed' }));
      expect(gone).toEqual({ status: 404, data: { error: expect.objectContaining({ code: 'not_found' }) } });
      const again = await failure(nango.deleteIntegration('github-renamed'));
      expect(again.status).toBe(404);
      expect((await nango.listIntegrations()).configs.map((c) => c.unique_key)).toEqual([
        'github-app',
        'anthropic',
      ]);
    });

    it('refuses to rename an integration that has connections, and deleting it deletes them', async () => {
      const imported = await call(stack.gatewayUrl, 'POST', '/connections', {
        key: stack.secretKey,
        body: {
          provider_config_key: 'anthropic',
          connection_id: 'conn-1',
          credentials: { type: 'API_KEY', apiKey: `sk-${randomUUID()}` },
        },
      });
      expect(imported.status).toBe(201);

      const refused = await failure(
        nango.updateIntegration({ uniqueKey: 'anthropic' }, { unique_key: 'anthropic-renamed' }),
      );
      expect(refused.status).toBe(400);
      expect(refused.data).toMatchObject({
        error: { code: 'invalid_body', errors: [expect.objectContaining({ path: ['unique_key'] })] },
      });
      // Nothing changed: the integration keeps its key and its connection.
      expect((await nango.getIntegration({ uniqueKey: 'anthropic' })).data.unique_key).toBe('anthropic');
      expect((await nango.getConnection('anthropic', 'conn-1')).connection_id).toBe('conn-1');

      expect((await nango.deleteIntegration('anthropic')).data).toEqual({ success: true });
      const connections = await call(stack.gatewayUrl, 'GET', '/connections?integrationId=anthropic', {
        key: stack.secretKey,
      });
      expect(connections.body).toEqual({ connections: [] });
    });
  });

  describe('environment variables', () => {
    const token = `tok-${randomUUID()}`;

    it('starts empty', async () => {
      expect(await nango.getEnvironmentVariables()).toEqual([]);
    });

    it('reads what PUT /environment-variables stored, encrypted at rest', async () => {
      const put = await call(stack.gatewayUrl, 'PUT', '/environment-variables', {
        key: stack.secretKey,
        body: {
          variables: [
            { name: 'API_TOKEN', value: token },
            { name: 'REGION', value: 'eu' },
          ],
        },
      });
      expect(put.status).toBe(200);
      expect(await nango.getEnvironmentVariables()).toEqual([
        { name: 'API_TOKEN', value: token },
        { name: 'REGION', value: 'eu' },
      ]);

      const { rows } = await db.query(
        'select v.value from auth.environment_variables v join auth.environments e on e.id = v.environment_id where e.uuid = $1',
        [stack.environmentUuid],
      );
      expect(rows).toHaveLength(2);
      for (const row of rows) expect(row.value).not.toContain(token);
    });

    it('reads what the CLI set, the other variables kept', async () => {
      const cli = join(repoRoot(), 'packages/cli/dist/main.js');
      const { stdout } = await run(process.execPath, [
        cli,
        '--host',
        stack.gatewayUrl,
        '--key',
        stack.secretKey,
        'env-vars',
        'set',
        'A=1',
        'B=2',
      ]);
      expect(stdout).toContain('4 variable(s) stored');
      expect(await nango.getEnvironmentVariables()).toEqual([
        { name: 'A', value: '1' },
        { name: 'API_TOKEN', value: token },
        { name: 'B', value: '2' },
        { name: 'REGION', value: 'eu' },
      ]);
    });

    it('replaces the whole set with PUT', async () => {
      const put = await call(stack.gatewayUrl, 'PUT', '/environment-variables', {
        key: stack.secretKey,
        body: { variables: [{ name: 'ONLY', value: 'x' }] },
      });
      expect(put.body).toEqual([{ name: 'ONLY', value: 'x' }]);
      expect(await nango.getEnvironmentVariables()).toEqual([{ name: 'ONLY', value: 'x' }]);
    });
  });
});
