import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Module, type DynamicModule, type INestMicroservice, type LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Transport } from '@nestjs/microservices';
import {
  AUTH_INTERNAL_REQUESTS,
  SwitchboardError,
  type Caller,
  type NatsRequestOf,
} from '@switchboard/contracts';
import type { AuthDb } from '@switchboard/db';
import { NatsRequester } from '@switchboard/messaging';
import { ServiceKitModule } from '@switchboard/service-kit';
import { LoopbackHttpFake, requestBody, testInfrastructure } from '@switchboard/testing';
import { jwtVerify } from 'jose';
import { connect, type NatsConnection } from 'nats';
import { AUTH_CONNECT_ENV, envSchema, type AuthConnectEnv } from '../config/env';
import { AUTH_DB, DatabaseModule } from '../database/database.module';
import { IntegrationsModule } from '../integrations/integrations.module';
import { IntegrationsService } from '../integrations/integrations.service';
import { ProvidersModule } from '../providers/providers.module';
import { TokenRefreshModule } from './token-refresh.module';
import { closeProviderEgress, configureProviderEgress } from '../exchanges/provider-egress';

/**
 * The two internal subjects end to end: a real NATS, a real Postgres (integration secrets encrypted at
 * rest), the auth-connect modules that serve them, and a fake provider on loopback. The provider URLs
 * come from an operator providers file whose token URLs start with `${connectionConfig.fake_base}`.
 */

const OAUTH_SECRET = `oauth-secret-${randomBytes(6).toString('hex')}`;
const CC_SECRET = `cc-secret-${randomBytes(6).toString('hex')}`;
const INSTALLATION_ID = '4242';

class FakeProvider extends LoopbackHttpFake {
  readonly calls: { path: string; authorization?: string; fields: Record<string, string> }[] = [];
  readonly liveRefreshTokens = new Set<string>();

  constructor(private readonly appPublicKey: Parameters<typeof jwtVerify>[1]) {
    super();
  }

  protected async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const fields = Object.fromEntries(new URLSearchParams(await requestBody(req)));
    const url = new URL(req.url ?? '/', this.url);
    this.calls.push({
      path: url.pathname,
      ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
      fields,
    });
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };

    if (url.pathname === '/token' && fields['grant_type'] === 'refresh_token') {
      const basic = Buffer.from((req.headers.authorization ?? '').replace(/^Basic /, ''), 'base64').toString(
        'utf8',
      );
      if (basic !== `oauth-client:${OAUTH_SECRET}`) return send(401, { error: 'invalid_client' });
      const presented = fields['refresh_token'] ?? '';
      if (!this.liveRefreshTokens.delete(presented)) {
        return send(400, {
          error: 'invalid_grant',
          error_description: `Refresh token ${presented} was already used`,
        });
      }
      const next = `rt-${randomBytes(6).toString('hex')}`;
      this.liveRefreshTokens.add(next);
      return send(200, {
        access_token: `at-${randomBytes(6).toString('hex')}`,
        refresh_token: next,
        expires_in: 3600,
        instance_url: 'https://eu.example.com',
      });
    }
    if (url.pathname === '/token' && fields['grant_type'] === 'client_credentials') {
      if (fields['client_id'] !== 'cc-client' || fields['client_secret'] !== CC_SECRET)
        return send(401, { error: 'invalid_client' });
      return send(200, { access_token: `cc-${randomBytes(6).toString('hex')}`, expires_in: 600 });
    }
    if (url.pathname === `/app/installations/${INSTALLATION_ID}/access_tokens`) {
      try {
        await jwtVerify((req.headers.authorization ?? '').replace(/^Bearer /, ''), this.appPublicKey, {
          issuer: 'app-77',
          algorithms: ['RS256'],
        });
      } catch {
        return send(401, { message: 'A JSON web token could not be decoded' });
      }
      return send(201, {
        token: `ghs_${randomBytes(6).toString('hex')}`,
        expires_at: new Date(Date.now() + 3600_000).toISOString(),
      });
    }
    send(404, { error: 'not_found' });
  }
}

/** Everything the service logged, to prove no secret ended up there. */
class CapturingLogger implements LoggerService {
  readonly lines: string[] = [];
  private add = (...parts: unknown[]) =>
    void this.lines.push(parts.map((p) => (typeof p === 'string' ? p : JSON.stringify(p))).join(' '));
  log = this.add;
  error = this.add;
  warn = this.add;
  debug = this.add;
  verbose = this.add;
  fatal = this.add;
}

@Module({})
class RefreshTestModule {
  static forRoot(env: AuthConnectEnv): DynamicModule {
    return {
      module: RefreshTestModule,
      global: true,
      imports: [
        ServiceKitModule.forRoot({ name: 'auth-connect', nats: env }),
        DatabaseModule,
        ProvidersModule,
        IntegrationsModule,
        TokenRefreshModule,
      ],
      providers: [{ provide: AUTH_CONNECT_ENV, useValue: env }],
      exports: [AUTH_CONNECT_ENV],
    };
  }
}

const providersYaml = (extra = '') => `
fake-oauth2:
  display_name: Fake OAuth2
  categories: [other]
  docs: https://example.com/docs
  auth_mode: OAUTH2
  authorization_url: \${connectionConfig.fake_base}/authorize
  token_url: \${connectionConfig.fake_base}/token
  token_request_auth_method: basic
  token_response_metadata: [instance_url]
  connection_config:
    fake_base: { type: string, title: Fake base URL, pattern: '^https?://127\\.0\\.0\\.1:[0-9]+$' }
fake-cc:
  display_name: Fake client credentials
  categories: [other]
  docs: https://example.com/docs
  auth_mode: OAUTH2_CC
  token_url: \${connectionConfig.fake_base}/token
  connection_config:
    fake_base: { type: string, title: Fake base URL, pattern: '^https?://127\\.0\\.0\\.1:[0-9]+$' }
fake-app:
  display_name: Fake GitHub App
  categories: [other]
  docs: https://example.com/docs
  auth_mode: APP
  token_url: \${connectionConfig.fake_base}/app/installations/\${connectionConfig.installation_id}/access_tokens
  installation_check:
    token_url: \${connectionConfig.fake_base}/login/oauth/access_token
    installations_url: \${connectionConfig.fake_base}/user/installations
  connection_config:
    fake_base: { type: string, title: Fake base URL, pattern: '^https?://127\\.0\\.0\\.1:[0-9]+$' }
    installation_id: { type: string, title: Installation, automated: true }
fake-custom:
  display_name: Fake GitHub App OAuth
  categories: [other]
  docs: https://example.com/docs
  auth_mode: CUSTOM
  authorization_url: \${connectionConfig.fake_base}/login/oauth/authorize
  token_url: \${connectionConfig.fake_base}/login/oauth/access_token
  proxy:
    base_url: \${connectionConfig.fake_base}
  connection_config:
    fake_base: { type: string, title: Fake base URL, pattern: '^https?://127\\.0\\.0\\.1:[0-9]+$' }
    installation_id: { type: string, title: Installation, automated: true }
${extra}`;

jest.setTimeout(20_000);

describe('auth-connect internal subjects: token refresh and integration resolve', () => {
  const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const appPrivateKey = keys.privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  const fake = new FakeProvider(keys.publicKey);
  const logger = new CapturingLogger();
  const dir = mkdtempSync(join(tmpdir(), 'sb-refresh-'));
  let service: INestMicroservice;
  let nc: NatsConnection;
  let nats: NatsRequester;
  let db: AuthDb;
  let caller: Caller;
  const seenSecrets: string[] = [OAUTH_SECRET, CC_SECRET, appPrivateKey.split('\n')[1]!];

  type RefreshBody = Omit<
    NatsRequestOf<typeof AUTH_INTERNAL_REQUESTS.refresh>,
    'environmentId' | 'connectionId'
  >;
  const refresh = (body: RefreshBody) =>
    nats.call(AUTH_INTERNAL_REQUESTS.refresh, {
      environmentId: caller.environmentId,
      connectionId: 'conn-1',
      ...body,
    });
  const failure = (promise: Promise<unknown>) =>
    promise.then(
      () => undefined,
      (e: unknown) => e as SwitchboardError,
    );

  beforeAll(async () => {
    configureProviderEgress('127.0.0.1'); // the fake provider listens on loopback
    const infra = await testInfrastructure();
    await fake.start();
    const providersFile = join(dir, 'providers.yaml');
    writeFileSync(providersFile, providersYaml());
    const env = envSchema.parse({
      NATS_URL: infra.natsUrl,
      DATABASE_URL: infra.databaseUrl,
      SWITCHBOARD_MASTER_KEYS: process.env.TEST_MASTER_KEYS ?? `1:${randomBytes(32).toString('base64')}`,
      SWITCHBOARD_PROVIDERS_FILE: providersFile,
    });
    service = await NestFactory.createMicroservice(RefreshTestModule.forRoot(env), {
      transport: Transport.NATS,
      options: { servers: [infra.natsUrl], queue: 'auth-connect' },
      logger,
    });
    await service.listen();
    nc = await connect({ servers: infra.natsUrl });
    nats = new NatsRequester(nc, 10_000);

    db = service.get<AuthDb>(AUTH_DB);
    const account = await db.account.create({ data: { name: `refresh-test-${randomUUID()}` } });
    const environment = await db.environment.create({ data: { accountId: account.id, name: 'dev' } });
    caller = {
      accountId: account.id,
      environmentId: environment.id,
      environmentUuid: environment.uuid,
      environmentName: 'dev',
    };
    const integrations = service.get(IntegrationsService);
    await integrations.create(caller, {
      provider: 'fake-oauth2',
      unique_key: 'crm',
      credentials: {
        type: 'OAUTH2',
        client_id: 'oauth-client',
        client_secret: OAUTH_SECRET,
        scopes: 'read,write',
      },
    });
    await integrations.create(caller, { provider: 'fake-cc', unique_key: 'cc-plain' });
    await integrations.create(caller, {
      provider: 'fake-app',
      unique_key: 'gh',
      credentials: {
        type: 'APP',
        app_id: 'app-77',
        app_link: 'https://github.com/apps/fake',
        private_key: appPrivateKey,
      },
    });
    await integrations.create(caller, {
      provider: 'fake-custom',
      unique_key: 'gh-oauth',
      credentials: {
        type: 'CUSTOM',
        client_id: 'gh-oauth-client',
        client_secret: OAUTH_SECRET,
        app_id: 'app-77',
        app_link: 'https://github.com/apps/fake',
        private_key: appPrivateKey,
      },
    });
  }, 60_000);

  afterAll(async () => {
    await closeProviderEgress();
    if (caller) await db.account.delete({ where: { id: caller.accountId } });
    await nc?.close();
    await service?.close();
    await fake.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  it('resolves an integration with its secrets decrypted, over the internal bus', async () => {
    const crm = await nats.call(AUTH_INTERNAL_REQUESTS.resolveIntegration, {
      environmentId: caller.environmentId,
      uniqueKey: 'crm',
    });
    expect(crm).toMatchObject({
      uniqueKey: 'crm',
      provider: 'fake-oauth2',
      clientId: 'oauth-client',
      clientSecret: OAUTH_SECRET,
      scopes: 'read,write',
    });
    expect(crm.providerDefinition).toMatchObject({
      name: 'fake-oauth2',
      auth_mode: 'OAUTH2',
      token_request_auth_method: 'basic',
    });
    const gh = await nats.call(AUTH_INTERNAL_REQUESTS.resolveIntegration, {
      environmentId: caller.environmentId,
      uniqueKey: 'gh',
    });
    expect(gh).toMatchObject({ appId: 'app-77', privateKey: appPrivateKey, clientSecret: null });
  });

  it('answers unknown_provider_config for an integration of another environment or none', async () => {
    const error = await failure(
      nats.call(AUTH_INTERNAL_REQUESTS.resolveIntegration, {
        environmentId: caller.environmentId + 100_000,
        uniqueKey: 'crm',
      }),
    );
    expect(error).toMatchObject({ code: 'unknown_provider_config' });
  });

  it('refreshes an OAUTH2 connection with the integration’s decrypted client, and returns token metadata', async () => {
    fake.liveRefreshTokens.add('rt-start');
    const result = await refresh({
      providerConfigKey: 'crm',
      credentials: {
        type: 'OAUTH2',
        access_token: 'at-old',
        refresh_token: 'rt-start',
        expires_at: new Date().toISOString(),
        raw: {},
      },
      connectionConfig: { fake_base: fake.url },
    });
    expect(result.credentials).toMatchObject({
      type: 'OAUTH2',
      access_token: expect.stringMatching(/^at-/),
      refresh_token: expect.stringMatching(/^rt-/),
    });
    expect(result.credentials['refresh_token']).not.toBe('rt-start');
    expect(new Date(result.credentials['expires_at'] as string).getTime()).toBeGreaterThan(
      Date.now() + 50 * 60_000,
    );
    expect(result.connectionConfig).toEqual({ instance_url: 'https://eu.example.com' });
    expect(fake.calls.at(-1)?.fields).toEqual({ grant_type: 'refresh_token', refresh_token: 'rt-start' });
  });

  it('answers refresh_token_external_error when the provider refuses, without the token in the message', async () => {
    const used = `rt-used-${randomBytes(6).toString('hex')}`;
    seenSecrets.push(used);
    const error = await failure(
      refresh({
        providerConfigKey: 'crm',
        credentials: { type: 'OAUTH2', access_token: 'at-x', refresh_token: used, raw: {} },
        connectionConfig: { fake_base: fake.url },
      }),
    );
    expect(error).toBeInstanceOf(SwitchboardError);
    expect(error?.code).toBe('refresh_token_external_error');
    expect(error?.message).toContain('invalid_grant');
    expect(error?.message).not.toContain(used);
  });

  it('answers refresh_token_external_error naming the missing connection config', async () => {
    const error = await failure(
      refresh({
        providerConfigKey: 'crm',
        credentials: { type: 'OAUTH2', access_token: 'a', refresh_token: 'r-123456', raw: {} },
      }),
    );
    expect(error).toMatchObject({ code: 'refresh_token_external_error' });
    expect(error?.message).toContain('fake_base');
  });

  it('re-issues an OAUTH2_CC token with the client the end user gave at connect time', async () => {
    const result = await refresh({
      providerConfigKey: 'cc-plain',
      credentials: {
        type: 'OAUTH2_CC',
        token: 'cc-old',
        client_id: 'cc-client',
        client_secret: CC_SECRET,
        raw: {},
      },
      connectionConfig: { fake_base: fake.url },
    });
    expect(result.credentials).toMatchObject({
      type: 'OAUTH2_CC',
      token: expect.stringMatching(/^cc-/),
      client_id: 'cc-client',
      client_secret: CC_SECRET,
    });
    expect(result.credentials['token']).not.toBe('cc-old');
  });

  it('gets a new installation token for an APP connection', async () => {
    const result = await refresh({
      providerConfigKey: 'gh',
      credentials: { type: 'APP', access_token: 'ghs_old', raw: {} },
      connectionConfig: { fake_base: fake.url, installation_id: INSTALLATION_ID },
    });
    expect(result.credentials).toMatchObject({ type: 'APP', access_token: expect.stringMatching(/^ghs_/) });
    expect(result.credentials['access_token']).not.toBe('ghs_old');
  });

  it('gives an imported CUSTOM connection (no user token yet) its installation token', async () => {
    const result = await refresh({
      providerConfigKey: 'gh-oauth',
      credentials: { type: 'CUSTOM' },
      connectionConfig: { fake_base: fake.url, installation_id: INSTALLATION_ID },
    });
    expect(result.credentials).toEqual({
      type: 'CUSTOM',
      app: {
        access_token: expect.stringMatching(/^ghs_/),
        expires_at: expect.any(String),
        raw: expect.any(Object),
      },
    });
  });

  it('returns API key credentials unchanged without calling the provider', async () => {
    const calls = fake.calls.length;
    const credentials = { type: 'API_KEY', apiKey: 'sk-unchanged' };
    await expect(refresh({ providerConfigKey: 'crm', credentials })).resolves.toEqual({ credentials });
    expect(fake.calls.length).toBe(calls);
  });

  it('refuses an unknown integration with unknown_provider_config', async () => {
    const error = await failure(
      refresh({
        providerConfigKey: 'nope',
        credentials: { type: 'OAUTH2', access_token: 'a', refresh_token: 'b' },
      }),
    );
    expect(error).toMatchObject({ code: 'unknown_provider_config' });
  });

  it('refuses a malformed request with invalid_body before doing anything', async () => {
    const error = await failure(
      // Sent by subject, past the caller's own check, to reach the handler's.
      nats.requestUnchecked(AUTH_INTERNAL_REQUESTS.refresh.subject, {
        environmentId: 'one',
        providerConfigKey: 'crm',
      }),
    );
    expect(error).toMatchObject({ code: 'invalid_body' });
  });

  it('logged the refreshes, and no secret or token', () => {
    const logs = logger.lines.join('\n');
    expect(logs).toContain('refreshed OAUTH2 credentials of crm/conn-1');
    expect(logs).toContain('refresh of crm/conn-1 failed (rejected, HTTP 400, invalid_grant)');
    for (const secret of seenSecrets) expect(logs).not.toContain(secret);
    expect(logs).not.toMatch(/at-[0-9a-f]{12}|ghs_[0-9a-f]{12}|cc-[0-9a-f]{12}/);
  });
});
