import { createHmac, generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto';
import { Nango } from '@nangohq/node';
import type { Stack } from '@switchboard/testing';
import { call } from './support/http';
import { START_HOOK_TIMEOUT_MS } from './support/processes';
import { standardStack } from './support/standard-stack';

/**
 * Rotating an integration's client secret with `PATCH /integrations/{uniqueKey}` (through the unmodified
 * `@nangohq/node` client) sends only the OAuth client credentials. As Nango, the webhook secret or public
 * key the update leaves out stays stored: the provider's signed webhooks are still accepted afterwards, and
 * unsigned or badly signed ones still refused.
 */

describe('updating an integration keeps the webhook credentials it does not send', () => {
  let stack: Stack;
  let nango: Nango;

  const webhook = (uniqueKey: string, body: string, headers: Record<string, string>) =>
    fetch(`${stack.gatewayUrl}/webhook/${stack.environmentUuid}/${uniqueKey}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });

  const clientSecretOf = async (uniqueKey: string) => {
    const read = await call(stack.gatewayUrl, 'GET', `/integrations/${uniqueKey}?include=credentials`, {
      key: stack.secretKey,
    });
    expect(read.status).toBe(200);
    return (read.body as { data: { credentials: { client_secret: string; webhook_secret: string | null } } })
      .data.credentials;
  };

  beforeAll(async () => {
    stack = await standardStack();
    nango = new Nango({ secretKey: stack.secretKey, host: stack.gatewayUrl });
  }, START_HOOK_TIMEOUT_MS);

  afterAll(async () => {
    await stack?.stop();
  });

  it('still verifies Linear webhooks with the stored webhook_secret after the client secret changed', async () => {
    const secret = `lin-${randomUUID()}`;
    await nango.createIntegration({
      provider: 'linear',
      unique_key: 'linear-rotated',
      credentials: {
        type: 'OAUTH2',
        client_id: 'lin-client',
        client_secret: 'lin-client-secret-1',
        webhook_secret: secret,
      },
    });
    await nango.updateIntegration(
      { uniqueKey: 'linear-rotated' },
      { credentials: { type: 'OAUTH2', client_id: 'lin-client', client_secret: 'lin-client-secret-2' } },
    );
    expect(await clientSecretOf('linear-rotated')).toMatchObject({
      client_secret: 'lin-client-secret-2',
      webhook_secret: secret,
    });

    const body = JSON.stringify({
      type: 'Issue',
      action: 'create',
      organizationId: 'org-rotated',
      webhookTimestamp: Date.now(),
      data: { id: randomUUID() },
    });
    const signedWith = (key: string) => ({
      'linear-signature': createHmac('sha256', key).update(body).digest('hex'),
      'linear-delivery': randomUUID(),
    });
    const signed = await webhook('linear-rotated', body, signedWith(secret));
    expect(signed.status).toBe(200);
    expect(await signed.json()).toEqual({ status: 'success' });
    expect((await webhook('linear-rotated', body, signedWith(`not-${secret}`))).status).toBe(401);
    expect((await webhook('linear-rotated', body, { 'linear-delivery': randomUUID() })).status).toBe(401);

    // An empty webhook_secret removes it, as in Nango.
    await nango.updateIntegration(
      { uniqueKey: 'linear-rotated' },
      {
        credentials: {
          type: 'OAUTH2',
          client_id: 'lin-client',
          client_secret: 'lin-client-secret-2',
          webhook_secret: '',
        },
      },
    );
    expect(await clientSecretOf('linear-rotated')).toMatchObject({
      client_secret: 'lin-client-secret-2',
      webhook_secret: null,
    });
  });

  it('still verifies HighLevel Ed25519 webhooks with the stored webhook_public_key after the client secret changed', async () => {
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const created = await call(stack.gatewayUrl, 'POST', '/integrations', {
      key: stack.secretKey,
      body: {
        provider: 'highlevel',
        unique_key: 'highlevel-rotated',
        credentials: {
          type: 'OAUTH2',
          client_id: 'ghl-client',
          client_secret: 'ghl-client-secret-1',
          webhook_public_key: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
        },
      },
    });
    expect(created.status).toBe(200);
    await nango.updateIntegration(
      { uniqueKey: 'highlevel-rotated' },
      { credentials: { type: 'OAUTH2', client_id: 'ghl-client', client_secret: 'ghl-client-secret-2' } },
    );
    expect((await clientSecretOf('highlevel-rotated')).client_secret).toBe('ghl-client-secret-2');

    const body = JSON.stringify({
      type: 'ContactCreate',
      locationId: 'loc-rotated',
      webhookId: randomUUID(),
    });
    const signedWith = (key: KeyObject) => ({
      'x-ghl-signature': sign(null, Buffer.from(body), key).toString('base64'),
    });
    // Without the stored key the catalog's published HighLevel key would be used, and this would be refused.
    expect((await webhook('highlevel-rotated', body, signedWith(privateKey))).status).toBe(200);
    const other = generateKeyPairSync('ed25519').privateKey;
    expect((await webhook('highlevel-rotated', body, signedWith(other))).status).toBe(401);
    expect((await webhook('highlevel-rotated', body, {})).status).toBe(401);
  });
});
