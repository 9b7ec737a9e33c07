import { createHmac, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Nango } from '@nangohq/node';
import { repoRoot, type Stack } from '@switchboard/testing';
import { call } from './support/http';
import { START_HOOK_TIMEOUT_MS } from './support/processes';
import { WebhookReceiver } from './support/webhook-receiver';
import { standardStack } from './support/standard-stack';

/**
 * The provider catalog as a customer's scripts use it: every provider key they name can be turned into an
 * integration with the official `@nangohq/node` client and read back, and the catalog's 500+ entries are
 * listed and searched in Nango's shape.
 */

/** The keys of packages/providers/catalog/required-providers.yaml (a flat `required:` list). */
function requiredKeys(): string[] {
  const text = readFileSync(join(repoRoot(), 'packages/providers/catalog/required-providers.yaml'), 'utf8');
  return [...text.matchAll(/^ {2}- ([a-z0-9-]+)\s*$/gm)].map((match) => match[1]!);
}

/**
 * Dummy integration credentials of the shape the provider's auth mode takes. The modes where the end user
 * types every credential (API_KEY, BASIC, OAUTH2_CC, JWT, TWO_STEP, BILL, SIGNATURE, ...) take none.
 */
function dummyCredentials(authMode: string): Parameters<Nango['createIntegration']>[0]['credentials'] {
  switch (authMode) {
    case 'OAUTH1':
    case 'OAUTH2':
    case 'TBA':
      return { type: authMode, client_id: 'dummy-client-id', client_secret: 'dummy-client-secret' };
    default:
      return undefined;
  }
}

describe('provider catalog through @nangohq/node', () => {
  let stack: Stack;
  let nango: Nango;
  let receiver: WebhookReceiver;
  const required = requiredKeys();

  beforeAll(async () => {
    receiver = await new WebhookReceiver().start();
    stack = await standardStack();
    nango = new Nango({ secretKey: stack.secretKey, host: stack.gatewayUrl });
  }, START_HOOK_TIMEOUT_MS);

  afterAll(async () => {
    await stack?.stop();
    await receiver?.stop();
  });

  it('names at least 90 required keys, those of the newer auth modes among them', () => {
    expect(required.length).toBeGreaterThanOrEqual(90);
    expect(required).toEqual(
      expect.arrayContaining(['bill', 'connectsecure', 'perimeter81', 'snowflake-jwt', 'tripletex']),
    );
  });

  it('creates an integration for every required provider key and reads each back', async () => {
    const failures: string[] = [];
    for (const key of required) {
      try {
        const provider = (await nango.getProvider({ provider: key })).data;
        const credentials = dummyCredentials(provider.auth_mode);
        const created = await nango.createIntegration({
          provider: key,
          unique_key: `catalog-${key}`,
          ...(credentials ? { credentials } : {}),
        });
        expect(created.data).toMatchObject({ unique_key: `catalog-${key}`, provider: key });
        const read = await nango.getIntegration(
          { uniqueKey: `catalog-${key}` },
          { include: ['credentials'] },
        );
        expect(read.data).toMatchObject({
          unique_key: `catalog-${key}`,
          provider: key,
          logo: expect.stringContaining(`/images/template-logos/${key}.svg`),
        });
        if (credentials) {
          expect(read.data.credentials).toMatchObject({
            type: credentials.type,
            client_id: 'dummy-client-id',
            client_secret: 'dummy-client-secret',
          });
        } else {
          expect(read.data.credentials).toBeNull();
        }
      } catch (error) {
        failures.push(`${key}: ${(error as Error).message}`);
      }
    }
    expect(failures).toEqual([]);
  }, 300_000);

  it('lists 500+ providers in Nango shape, each with a monogram logo the gateway serves', async () => {
    const { data } = await nango.listProviders({});
    expect(data.length).toBeGreaterThanOrEqual(500);
    for (const provider of data) {
      expect(provider).toMatchObject({
        name: expect.any(String),
        display_name: expect.any(String),
        categories: expect.any(Array),
        auth_mode: expect.any(String),
        docs: expect.stringMatching(/^https:\/\//),
        logo_url: `${stack.gatewayUrl}/images/template-logos/${provider.name}.svg`,
      });
    }
    for (const key of ['1password-scim', 'microsoft-dynamics-365-finance-and-operations-cc', 'zoho-books']) {
      const res = await fetch(`${stack.gatewayUrl}/images/template-logos/${key}.svg`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('image/svg+xml');
      expect(await res.text()).toContain(`aria-label="${key}"`);
    }
  });

  it('searches the catalog by key or display name, quickly', async () => {
    const started = Date.now();
    for (let i = 0; i < 20; i += 1) {
      const zoho = await nango.listProviders({ search: 'ZOHO' });
      expect(zoho.data.map((p) => p.name)).toEqual(
        expect.arrayContaining(['zoho', 'zoho-books', 'zoho-desk', 'zoho-mail', 'zoho-people']),
      );
    }
    // 20 searches over 500+ entries, each a gateway → auth-connect round trip.
    expect(Date.now() - started).toBeLessThan(10_000);
    const byDisplayName = await nango.listProviders({ search: 'YouCanBookMe' });
    expect(byDisplayName.data.map((p) => p.name).sort()).toEqual(['youcanbook-me', 'youcanbook-me-public']);
  });

  it("verifies Checkr Partner webhooks with the app's client secret and routes them by Checkr account", async () => {
    const api = (method: string, path: string, body?: unknown) =>
      call(stack.gatewayUrl, method, path, { key: stack.secretKey, body });
    const clientSecret = `checkr-secret-${randomUUID()}`;
    expect(
      (await api('PATCH', '/environment', { webhook_settings: { primary_url: `${receiver.url}/primary` } }))
        .status,
    ).toBe(200);
    await nango.createIntegration({
      provider: 'checkr-partner',
      unique_key: 'checkr-hooks',
      credentials: { type: 'OAUTH2', client_id: 'checkr-client', client_secret: clientSecret },
    });
    // checkr_account_id comes from Checkr's token response; an import stands in for the OAuth dance.
    const imported = await api('POST', '/connections', {
      provider_config_key: 'checkr-hooks',
      connection_id: 'checkr-acct-1',
      credentials: { type: 'OAUTH2', access_token: 'tok-checkr' },
      connection_config: { checkr_account_id: 'acct-1', client_id: 'checkr-client' },
    });
    expect(imported.status).toBe(201);

    const send = (body: unknown, secret: string) => {
      const text = JSON.stringify(body);
      return fetch(`${stack.gatewayUrl}/webhook/${stack.environmentUuid}/checkr-hooks`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-checkr-signature': createHmac('sha256', secret).update(text).digest('hex'),
        },
        body: text,
      });
    };
    const event = {
      id: `evt-${randomUUID()}`,
      object: 'event',
      type: 'report.completed',
      account_id: 'acct-1',
      data: { object: { id: 'rep-1', object: 'report' } },
    };
    expect((await send({ ...event, id: `evt-${randomUUID()}` }, 'not-the-client-secret')).status).toBe(401);
    expect((await send(event, clientSecret)).status).toBe(200);

    const forwards = () =>
      receiver.on('/primary').filter((r) => (JSON.parse(r.body) as { type?: string }).type === 'forward');
    const deadline = Date.now() + 15_000;
    while (forwards().length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    // Only the verified delivery arrives: the forged one stopped at the front door.
    expect(forwards().map((r) => JSON.parse(r.body) as unknown)).toEqual([
      {
        from: 'checkr-partner',
        type: 'forward',
        providerConfigKey: 'checkr-hooks',
        connectionId: 'checkr-acct-1',
        payload: event,
        verified: true,
      },
    ]);
  });
  /**
   * Providers added to the catalog with a `webhook` block: each case signs a sample delivery the way the
   * provider documents it, and a forged copy (signed with another secret) must be refused with 401.
   * Routed providers reach their connection as a `forward`; the others arrive raw at the environment URL.
   */
  interface WebhookCase {
    provider: string;
    /** The integration's webhook secret, when the provider signs with one (else the client secret). */
    webhookSecret?: string;
    clientSecret: string;
    /** A connection whose provider-filled config the delivery names. */
    connection?: { id: string; config: Record<string, string> };
    body: Record<string, unknown>;
    sign: (text: string, secret: string) => Record<string, string>;
  }
  const hmac = (algorithm: 'sha256', secret: string, text: string, encoding: 'hex' | 'base64') =>
    createHmac(algorithm, secret).update(text).digest(encoding);
  const webhookCases: WebhookCase[] = [
    {
      provider: 'tiktok-personal',
      clientSecret: `tiktok-${randomUUID()}`,
      connection: { id: 'tiktok-user-1', config: { open_id: 'open-1' } },
      body: {
        client_key: 'ck-1',
        event: 'authorization.removed',
        create_time: Math.floor(Date.now() / 1000),
        user_openid: 'open-1',
        content: '{"reason":1}',
      },
      sign: (text, secret) => {
        const t = Math.floor(Date.now() / 1000);
        return { 'tiktok-signature': `t=${t},s=${hmac('sha256', secret, `${t}.${text}`, 'hex')}` };
      },
    },
    {
      provider: 'intuit',
      clientSecret: `intuit-${randomUUID()}`,
      webhookSecret: `verifier-${randomUUID()}`,
      body: {
        eventNotifications: [
          {
            realmId: '1185883450',
            dataChangeEvent: {
              entities: [
                { name: 'Customer', id: '1', operation: 'Create', lastUpdated: '2026-11-27T10:00:00.000Z' },
              ],
            },
          },
        ],
      },
      sign: (text, secret) => ({ 'intuit-signature': hmac('sha256', secret, text, 'base64') }),
    },
    {
      provider: 'gusto-demo',
      clientSecret: `gusto-${randomUUID()}`,
      webhookSecret: `verification-${randomUUID()}`,
      body: {
        uuid: randomUUID(),
        event_type: 'employee.created',
        resource_type: 'Company',
        resource_uuid: randomUUID(),
        entity_type: 'Employee',
        entity_uuid: randomUUID(),
        timestamp: Math.floor(Date.now() / 1000),
      },
      sign: (text, secret) => ({ 'x-gusto-signature': hmac('sha256', secret, text, 'hex') }),
    },
  ];

  it.each(webhookCases)(
    'verifies $provider webhooks as the provider signs them and refuses a forged one',
    async (c) => {
      const api = (method: string, path: string, body?: unknown) =>
        call(stack.gatewayUrl, method, path, { key: stack.secretKey, body });
      const hookPath = `/catalog-hooks-${c.provider}`;
      expect(
        (
          await api('PATCH', '/environment', {
            webhook_settings: { primary_url: `${receiver.url}${hookPath}` },
          })
        ).status,
      ).toBe(200);
      const key = `${c.provider}-hooks`;
      await nango.createIntegration({
        provider: c.provider,
        unique_key: key,
        credentials: {
          type: 'OAUTH2',
          client_id: `${c.provider}-client`,
          client_secret: c.clientSecret,
          ...(c.webhookSecret ? { webhook_secret: c.webhookSecret } : {}),
        },
      });
      if (c.connection) {
        // The routing key comes from the provider's token answer; an import stands in for the OAuth dance.
        const imported = await api('POST', '/connections', {
          provider_config_key: key,
          connection_id: c.connection.id,
          credentials: { type: 'OAUTH2', access_token: `tok-${c.provider}` },
          connection_config: c.connection.config,
        });
        expect(imported.status).toBe(201);
      }
      const secret = c.webhookSecret ?? c.clientSecret;
      const send = (body: unknown, signingSecret: string) => {
        const text = JSON.stringify(body);
        return fetch(`${stack.gatewayUrl}/webhook/${stack.environmentUuid}/${key}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...c.sign(text, signingSecret) },
          body: text,
        });
      };
      const forged = { ...c.body, forged: true };
      expect((await send(forged, `not-${secret}`)).status).toBe(401);
      expect((await send(c.body, secret)).status).toBe(200);

      // An imported connection also announces itself with an `auth` webhook; only deliveries count here.
      const arrived = () =>
        receiver.on(hookPath).filter((r) => (JSON.parse(r.body) as { type?: string }).type !== 'auth');
      const deadline = Date.now() + 15_000;
      while (arrived().length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
      const bodies = arrived().map((r) => JSON.parse(r.body) as unknown);
      if (c.connection) {
        expect(bodies).toEqual([
          {
            from: c.provider,
            type: 'forward',
            providerConfigKey: key,
            connectionId: c.connection.id,
            payload: c.body,
            verified: true,
          },
        ]);
      } else {
        // No provider-filled key names the connection: the verified delivery goes raw to the environment.
        expect(bodies).toEqual([c.body]);
        expect(arrived()[0]!.headers['x-switchboard-webhook-verified']).toBe('true');
      }
    },
  );

  it("answers Gusto's unsigned verification_token request and forwards it so the token can be read", async () => {
    const hookPath = '/catalog-hooks-gusto-verify';
    const api = (method: string, path: string, body?: unknown) =>
      call(stack.gatewayUrl, method, path, { key: stack.secretKey, body });
    expect(
      (
        await api('PATCH', '/environment', {
          webhook_settings: { primary_url: `${receiver.url}${hookPath}` },
        })
      ).status,
    ).toBe(200);
    await nango.createIntegration({
      provider: 'gusto-demo',
      unique_key: 'gusto-verify',
      credentials: { type: 'OAUTH2', client_id: 'gusto-client', client_secret: 'gusto-secret' },
    });
    const body = { verification_token: randomUUID(), webhook_subscription_uuid: randomUUID() };
    const res = await fetch(`${stack.gatewayUrl}/webhook/${stack.environmentUuid}/gusto-verify`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
    const deadline = Date.now() + 15_000;
    while (receiver.on(hookPath).length === 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 25));
    expect(receiver.on(hookPath).map((r) => JSON.parse(r.body) as unknown)).toEqual([body]);
  });
});
