import { createHash, createHmac, generateKeyPairSync, randomBytes, randomUUID, sign } from 'node:crypto';
import { SignJWT } from 'jose';
import { expectError } from './support/http';
import { standardStack } from './support/standard-stack';
import { standardWebhookHeaders } from './support/webhook-events';
import { catalogWebhooks, providerRouted, waitUntil, webhookRelaySuite } from './support/webhook-relay-suite';

/**
 * The webhook relay's ingress for the signature schemes of the catalog: each provider's webhook verified
 * with the secret or public key its integration stores (forged ones refused with 401, never delivered),
 * routed to the connection it names, and the webhook keys an integration may not store refused.
 */

describe('webhook relay', () => {
  const relay = webhookRelaySuite(() => standardStack());
  const { api } = relay;

  describe('signature schemes of the catalog', () => {
    // As the settings tests leave them, so these also run alone (-t).
    beforeAll(() => relay.receiveOnPrimary());

    const catalog = catalogWebhooks(relay);
    const { deliveredWith, send, refusesForgedDeliversSigned } = catalog;
    const { createIntegration, createOAuthIntegration, importConnection } = catalog;

    /**
     * A forged and a signed webhook of `event`, each with a marker of its own (the signed one's starting
     * with `prefix`), headed by what `forgedHeaders` and `signedHeaders` make of their bodies.
     */
    const forgedAndSigned = (
      prefix: string,
      event: (marker: string) => string,
      forgedHeaders: (body: string) => Record<string, string>,
      signedHeaders: (body: string) => Record<string, string>,
    ) => {
      const webhook = (marker: string, headers: (body: string) => Record<string, string>) => {
        const body = event(marker);
        return { marker, body, headers: headers(body) };
      };
      return [
        webhook(`forged-${randomUUID()}`, forgedHeaders),
        webhook(`${prefix}-${randomUUID()}`, signedHeaders),
      ] as const;
    };

    it('verifies Dixa webhooks with the hex-decoded key an API-key integration stores as its webhook secret', async () => {
      const secret = randomBytes(16).toString('hex');
      await createIntegration('dixa', 'dixa-hooks', { type: 'API_KEY', webhook_secret: secret });
      const read = await api('GET', '/integrations/dixa-hooks?include=credentials');
      expect((read.body as { data: { credentials: unknown } }).data.credentials).toEqual({
        type: 'API_KEY',
        webhook_secret: secret,
      });
      const event = (marker: string) =>
        JSON.stringify({ event_id: randomUUID(), event_fqn: 'CONVERSATION_CREATED', data: { marker } });
      const dixaSigned = (body: string, key: Buffer | string) => {
        const t = String(Date.now());
        const v1 = createHmac('sha256', key).update(`${t}.${body}`).digest('hex');
        return { 'x-dixa-signature': `t=${t},v1=${v1}` };
      };
      const [forged, signed] = forgedAndSigned(
        'dixa',
        event,
        // Keyed by the secret's text instead of its bytes: what a recipe without `secret_encoding` would check.
        (body) => dixaSigned(body, secret),
        (body) => dixaSigned(body, Buffer.from(secret, 'hex')),
      );
      const [hook] = await refusesForgedDeliversSigned('dixa-hooks', forged, signed);
      // Nothing names the connection: the raw payload goes to the environment's URL.
      expect(hook!.path).toBe('/primary');
      expect(JSON.parse(hook!.body)).toEqual(JSON.parse(signed.body));
    });

    it('routes a Dixa webhook by its organization id to the connection whose metadata names it, and an unknown one unrouted', async () => {
      const secret = randomBytes(16).toString('hex');
      await createIntegration('dixa', 'dixa-routed', { type: 'API_KEY', webhook_secret: secret });
      const orgA = `org-${randomUUID()}`;
      for (const id of ['dixa-a', 'dixa-b']) {
        await importConnection('dixa-routed', {
          connection_id: id,
          credentials: { type: 'API_KEY', apiKey: `key-${id}` },
          connection_config: { apiType: 'dev' },
          webhook_url_override: `${relay.receiver.url}/${id}`,
        });
      }
      // An API key names no organization: the customer records it, as Nango's setMetadata does.
      for (const [id, organizationId] of [
        ['dixa-a', orgA],
        ['dixa-b', `org-${randomUUID()}`],
      ] as const) {
        const res = await api('POST', '/connections/metadata', {
          connection_id: id,
          provider_config_key: 'dixa-routed',
          metadata: { organizationId },
        });
        expect(res.status).toBe(201);
      }
      const sendEvent = async (organizationId: string, marker: string) => {
        const body = JSON.stringify({
          event_id: randomUUID(),
          event_fqn: 'CONVERSATION_CREATED',
          organization: { id: organizationId, name: 'Acme' },
          data: { marker },
        });
        const t = String(Date.now());
        const v1 = createHmac('sha256', Buffer.from(secret, 'hex')).update(`${t}.${body}`).digest('hex');
        expect((await send('dixa-routed', body, { 'x-dixa-signature': `t=${t},v1=${v1}` })).status).toBe(200);
        return body;
      };

      const marker = `dixa-a-${randomUUID()}`;
      const body = await sendEvent(orgA, marker);
      await waitUntil(() => deliveredWith(marker).length > 0);
      const unknownMarker = `dixa-nobody-${randomUUID()}`;
      const unknownBody = await sendEvent(`org-${randomUUID()}`, unknownMarker);
      await waitUntil(() => deliveredWith(unknownMarker).length > 0);
      // The unknown one was sent after and is out: anything else for the first would be out by now too.
      const hooks = deliveredWith(marker);
      expect(hooks.map((hook) => hook.path)).toEqual(['/dixa-a']);
      expect(JSON.parse(hooks[0]!.body)).toEqual({
        from: 'dixa',
        type: 'forward',
        providerConfigKey: 'dixa-routed',
        connectionId: 'dixa-a',
        payload: JSON.parse(body),
        verified: true,
      });
      const unrouted = deliveredWith(unknownMarker);
      expect(unrouted.map((hook) => hook.path)).toEqual(['/primary']);
      expect(JSON.parse(unrouted[0]!.body)).toEqual(JSON.parse(unknownBody));
    });

    it.each(providerRouted)(
      'routes a signed $provider webhook to the connection of the account it names only',
      async ({ provider, apiKey, config, secret, signed }) => {
        const key = `${provider}-by-account`;
        if (apiKey) await createIntegration(provider, key, { type: 'API_KEY', webhook_secret: secret });
        else await createOAuthIntegration(provider, key, secret);
        const accountA = `acct-${randomUUID()}`;
        for (const [id, account] of [
          [`${provider}-a`, accountA],
          [`${provider}-b`, `acct-${randomUUID()}`],
        ] as const) {
          await importConnection(key, {
            connection_id: id,
            credentials: apiKey
              ? { type: 'API_KEY', apiKey: `key-${id}` }
              : { type: 'OAUTH2', access_token: `tok-${id}` },
            connection_config: config(account),
            webhook_url_override: `${relay.receiver.url}/${id}`,
          });
        }
        const marker = `${provider}-a-${randomUUID()}`;
        const hook = signed(accountA, marker, secret);
        expect((await send(key, hook.body, hook.headers)).status).toBe(200);
        await waitUntil(() => deliveredWith(marker).length > 0);
        // A later webhook for an account no connection has goes out unrouted; once it is out, anything
        // else for the first would be out too.
        const unknownMarker = `${provider}-nobody-${randomUUID()}`;
        const unknown = signed(`acct-${randomUUID()}`, unknownMarker, secret);
        expect((await send(key, unknown.body, unknown.headers)).status).toBe(200);
        await waitUntil(() => deliveredWith(unknownMarker).length > 0);

        const hooks = deliveredWith(marker);
        expect(hooks.map((h) => [h.path, JSON.parse(h.body).connectionId])).toEqual([
          [`/${provider}-a`, `${provider}-a`],
        ]);
        expect(JSON.parse(hooks[0]!.body)).toMatchObject({
          type: 'forward',
          providerConfigKey: key,
          payload: JSON.parse(hook.body),
          verified: true,
        });
        expect(deliveredWith(unknownMarker).map((h) => h.path)).toEqual(['/primary']);
      },
    );

    it('verifies Standard Webhooks (Fathom) with the base64 whsec_ key, routed to the connection by email', async () => {
      const secret = `whsec_${randomBytes(24).toString('base64')}`;
      await createIntegration('fathom', 'fathom-hooks', { type: 'API_KEY', webhook_secret: secret });
      const email = `ana-${randomUUID()}@acme.example`;
      await importConnection('fathom-hooks', {
        connection_id: 'fathom-ana',
        credentials: { type: 'API_KEY', apiKey: 'fathom-key' },
        metadata: { emailAddress: email },
        webhook_url_override: `${relay.receiver.url}/fathom-ana`,
      });
      const meeting = (marker: string) => ({ title: marker, recorded_by: { email } });
      const [forged, signed] = forgedAndSigned(
        'fathom',
        (marker) => JSON.stringify(meeting(marker)),
        (body) => standardWebhookHeaders(`whsec_${randomBytes(24).toString('base64')}`, body),
        (body) => standardWebhookHeaders(secret, body),
      );
      const [hook] = await refusesForgedDeliversSigned('fathom-hooks', forged, signed);
      expect(hook!.path).toBe('/fathom-ana');
      expect(JSON.parse(hook!.body)).toEqual({
        from: 'fathom',
        type: 'forward',
        providerConfigKey: 'fathom-hooks',
        connectionId: 'fathom-ana',
        payload: meeting(signed.marker),
        verified: true,
      });
    });

    it("verifies Follow Up Boss's HMAC over the base64 of the body", async () => {
      const systemKey = `fub-${randomUUID()}`;
      await createOAuthIntegration('followupboss', 'fub-hooks', systemKey);
      const event = (marker: string) =>
        JSON.stringify({ eventId: randomUUID(), event: 'peopleCreated', resourceIds: [1], uri: marker });
      const hmacHex = (text: string) => createHmac('sha256', systemKey).update(text).digest('hex');
      const [forged, signed] = forgedAndSigned(
        'fub',
        event,
        // Right key, but over the body itself rather than its base64.
        (body) => ({ 'fub-signature': hmacHex(body) }),
        (body) => ({ 'fub-signature': hmacHex(Buffer.from(body).toString('base64')) }),
      );
      const [hook] = await refusesForgedDeliversSigned('fub-hooks', forged, signed);
      expect(JSON.parse(hook!.body)).toEqual(JSON.parse(signed.body));
    });

    it("verifies Recharge's SHA-256 digest of the client secret and body, which is no HMAC", async () => {
      const clientSecret = `rc-${randomUUID()}`;
      await createIntegration('recharge', 'recharge-hooks', {
        type: 'API_KEY',
        webhook_secret: clientSecret,
      });
      const event = (marker: string) => JSON.stringify({ charge: { id: 4242, note: marker } });
      const [forged, signed] = forgedAndSigned(
        'recharge',
        event,
        // The right secret, but as the HMAC key the header's name suggests.
        (body) => ({
          'x-recharge-hmac-sha256': createHmac('sha256', clientSecret).update(body).digest('hex'),
          'x-recharge-topic': 'charge/paid',
        }),
        (body) => ({
          'x-recharge-hmac-sha256': createHash('sha256').update(`${clientSecret}${body}`).digest('hex'),
          'x-recharge-topic': 'charge/paid',
        }),
      );
      const [hook] = await refusesForgedDeliversSigned('recharge-hooks', forged, signed);
      expect(hook!.path).toBe('/primary');
      expect(JSON.parse(hook!.body)).toEqual(JSON.parse(signed.body));
    });

    it('verifies HighLevel Ed25519 signatures with the public key the integration stores, else HighLevel’s own', async () => {
      const { publicKey, privateKey } = generateKeyPairSync('ed25519');
      const stored = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
      await createOAuthIntegration('highlevel', 'highlevel-hooks', stored);
      const locationId = `loc-${randomUUID()}`;
      // locationId comes from HighLevel's token answer; an import stands in for the OAuth dance.
      await importConnection('highlevel-hooks', {
        connection_id: 'hl-location',
        credentials: { type: 'OAUTH2', access_token: 'hl-token' },
        connection_config: { locationId },
        webhook_url_override: `${relay.receiver.url}/highlevel`,
      });
      const event = (marker: string) => ({
        type: 'ContactCreate',
        locationId,
        webhookId: randomUUID(),
        marker,
      });
      const ed25519 = (body: string, key = privateKey) => ({
        'x-ghl-signature': sign(null, Buffer.from(body), key).toString('base64'),
      });
      const [forged, signed] = forgedAndSigned(
        'hl',
        (marker) => JSON.stringify(event(marker)),
        (body) => ed25519(body, generateKeyPairSync('ed25519').privateKey),
        (body) => ed25519(body),
      );
      const [hook] = await refusesForgedDeliversSigned('highlevel-hooks', forged, signed);
      expect(hook!.path).toBe('/highlevel');
      expect(JSON.parse(hook!.body)).toMatchObject({
        type: 'forward',
        connectionId: 'hl-location',
        payload: JSON.parse(signed.body),
        verified: true,
      });

      // Without a stored key the catalog's pinned HighLevel key checks it: ours is not HighLevel's.
      await createIntegration('highlevel', 'highlevel-pinned', {
        type: 'OAUTH2',
        client_id: 'hl-client',
        client_secret: 'hl-client-secret',
      });
      const pinnedMarker = `pinned-${randomUUID()}`;
      const pinnedBody = JSON.stringify(event(pinnedMarker));
      expect((await send('highlevel-pinned', pinnedBody, ed25519(pinnedBody))).status).toBe(401);
      await new Promise((r) => setTimeout(r, 300));
      expect(deliveredWith(pinnedMarker)).toEqual([]);
    });

    it('verifies Wise RSA-SHA256 webhooks with the public key an integration stores, which no answer shows', async () => {
      const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
      // Far longer than the 255 characters a webhook secret may hold.
      expect(pem.length).toBeGreaterThan(255);
      await createIntegration('wise', 'wise-hooks', { type: 'API_KEY', webhook_public_key: pem });
      // Write-only: the key's body is in no answer, with or without the credentials.
      const keyBody = pem.split('\n')[1]!;
      for (const path of ['/integrations/wise-hooks', '/integrations/wise-hooks?include=credentials']) {
        const read = await api('GET', path);
        expect(read.status).toBe(200);
        expect(JSON.stringify(read.body)).not.toContain(keyBody);
        expect(JSON.stringify(read.body)).not.toContain('webhook_public_key');
      }
      const read = await api('GET', '/integrations/wise-hooks?include=credentials');
      expect((read.body as { data: { credentials: unknown } }).data.credentials).toEqual({
        type: 'API_KEY',
        webhook_secret: null,
      });

      const event = (marker: string) =>
        JSON.stringify({
          event_type: 'transfers#state-change',
          schema_version: '2.0.0',
          data: { resource: { type: 'transfer', id: 111, profile_id: 222 }, current_state: marker },
        });
      const wiseSigned = (body: string, key = privateKey) => ({
        'x-signature-sha256': sign('sha256', Buffer.from(body), key).toString('base64'),
        'x-delivery-id': randomUUID(),
      });
      // Signed, then changed on the way: the signature no longer covers the bytes that arrive.
      const tamperedMarker = `tampered-${randomUUID()}`;
      const tampered = await send(
        'wise-hooks',
        event(tamperedMarker),
        wiseSigned(event(`original-${randomUUID()}`)),
      );
      expect(tampered.status).toBe(401);
      const [forged, signed] = forgedAndSigned(
        'wise',
        event,
        (body) => wiseSigned(body, generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey),
        (body) => wiseSigned(body),
      );
      const [hook] = await refusesForgedDeliversSigned('wise-hooks', forged, signed);
      expect(deliveredWith(tamperedMarker)).toEqual([]);
      // Nothing names a connection: the raw payload goes to the environment's URL.
      expect(hook!.path).toBe('/primary');
      expect(JSON.parse(hook!.body)).toEqual(JSON.parse(signed.body));
    });

    it('refuses a webhook public key that is unreadable, private, of another algorithm or for an HMAC provider, storing nothing', async () => {
      const rsaPair = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const pem = rsaPair.publicKey.export({ type: 'spki', format: 'pem' }).toString();
      const refusals: [string, string, unknown][] = [
        ['wise', 'wise-bad-pem', '-----BEGIN PUBLIC KEY-----\nnot a key\n-----END PUBLIC KEY-----\n'],
        ['wise', 'wise-private', rsaPair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()],
        [
          'wise',
          'wise-ed25519',
          generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }).toString(),
        ],
        ['wise', 'wise-huge', `${pem}${'A'.repeat(16_384)}`],
        ['dixa', 'dixa-public-key', pem],
      ];
      for (const [provider, key, publicKeyValue] of refusals) {
        const refused = expectError(
          await api('POST', '/integrations', {
            provider,
            unique_key: key,
            credentials: { type: 'API_KEY', webhook_public_key: publicKeyValue },
          }),
          400,
          'invalid_body',
        );
        expect(refused.errors?.[0]?.path).toEqual(['credentials', 'webhook_public_key']);
        expectError(await api('GET', `/integrations/${key}`), 404, 'not_found');
      }
      // An API-key integration of a signed provider still needs one of its two webhook credentials.
      expectError(
        await api('POST', '/integrations', {
          provider: 'wise',
          unique_key: 'wise-empty',
          credentials: { type: 'API_KEY' },
        }),
        400,
        'invalid_body',
      );
      expectError(await api('GET', '/integrations/wise-empty'), 404, 'not_found');

      // A bad key in an update leaves the stored one working.
      const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      await createIntegration('wise', 'wise-kept', {
        type: 'API_KEY',
        webhook_public_key: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
      });
      expectError(
        await api('PATCH', '/integrations/wise-kept', {
          credentials: { type: 'API_KEY', webhook_public_key: 'MIIB-not-base64' },
        }),
        400,
        'invalid_body',
      );
      const marker = `wise-kept-${randomUUID()}`;
      const body = JSON.stringify({ event_type: 'balances#credit', data: { marker } });
      const signature = sign('sha256', Buffer.from(body), privateKey).toString('base64');
      expect((await send('wise-kept', body, { 'x-signature-sha256': signature })).status).toBe(200);
      await waitUntil(() => deliveredWith(marker).length > 0);
    });

    it('verifies Dialpad JWT-signed webhooks (HS256 with the webhook secret) and delivers their claims', async () => {
      const secret = `dialpad-${randomUUID()}`;
      await createOAuthIntegration('dialpad', 'dialpad-hooks', secret);
      const token = (claims: Record<string, unknown>, key: string) =>
        new SignJWT(claims)
          .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
          .setIssuedAt()
          .setExpirationTime('5m')
          .sign(new TextEncoder().encode(key));
      const forgedMarker = `forged-${randomUUID()}`;
      const marker = `dialpad-${randomUUID()}`;
      const claims = { call_id: 4242, state: 'hangup', marker };
      const [hook] = await refusesForgedDeliversSigned(
        'dialpad-hooks',
        {
          marker: forgedMarker,
          body: await token({ call_id: 1, state: 'hangup', marker: forgedMarker }, `not-${secret}`),
          headers: { 'content-type': 'application/jwt' },
        },
        { marker, body: await token(claims, secret), headers: { 'content-type': 'application/jwt' } },
      );
      // The verified claims are the webhook, as JSON: the customer never has to decode the token.
      expect(JSON.parse(hook!.body)).toEqual({ ...claims, iat: expect.any(Number), exp: expect.any(Number) });
    });

    it('stores a GitHub App integration’s webhook secret and verifies its webhooks with it', async () => {
      const secret = `gh-app-${randomUUID()}`;
      const privateKey = generateKeyPairSync('rsa', { modulusLength: 2048 })
        .privateKey.export({ type: 'pkcs8', format: 'pem' })
        .toString();
      await createIntegration('github-app', 'gh-app-hooks', {
        type: 'APP',
        app_id: '4242',
        app_link: 'https://github.com/apps/switchboard-e2e',
        private_key: privateKey,
        webhook_secret: secret,
      });
      const read = await api('GET', '/integrations/gh-app-hooks?include=credentials');
      expect((read.body as { data: { credentials: unknown } }).data.credentials).toMatchObject({
        type: 'APP',
        app_id: '4242',
        webhook_secret: secret,
      });
      const push = (marker: string) =>
        JSON.stringify({ action: 'opened', zen: marker, installation: { id: 9 } });
      const githubSigned = (body: string, key: string) => ({
        'x-github-event': 'issues',
        'x-github-delivery': randomUUID(),
        'x-hub-signature-256': `sha256=${createHmac('sha256', key).update(body).digest('hex')}`,
      });
      await refusesForgedDeliversSigned(
        'gh-app-hooks',
        ...forgedAndSigned(
          'gh-app',
          push,
          (body) => githubSigned(body, `not-${secret}`),
          (body) => githubSigned(body, secret),
        ),
      );
    });

    it('refuses a webhook secret for a provider whose webhooks are not signed, storing nothing', async () => {
      const refused = expectError(
        await api('POST', '/integrations', {
          provider: 'teamtailor',
          unique_key: 'teamtailor-hooks',
          credentials: { type: 'API_KEY', webhook_secret: 'whatever' },
        }),
        400,
        'invalid_body',
      );
      expect(refused.errors?.[0]?.path).toEqual(['credentials', 'type']);
      expectError(await api('GET', '/integrations/teamtailor-hooks'), 404, 'not_found');
      // Only the webhook secret: an API-key integration holds no client credentials.
      expectError(
        await api('POST', '/integrations', {
          provider: 'fathom',
          unique_key: 'fathom-client',
          credentials: { type: 'API_KEY', webhook_secret: 'w', client_id: 'c' },
        }),
        400,
        'invalid_body',
      );
    });
  });
});
