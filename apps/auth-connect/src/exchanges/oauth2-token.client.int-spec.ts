import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ResolvedProvider } from '@switchboard/providers';
import { LoopbackHttpFake, requestBody } from '@switchboard/testing';
import { ProviderExchangeError } from './exchange.errors';
import { closeProviderEgress, configureProviderEgress } from './provider-egress';
import {
  exchangeAuthorizationCode,
  refreshOAuth2Token,
  requestClientCredentialsToken,
} from './oauth2-token.client';

/**
 * A fake OAuth 2 authorization server on loopback that checks what a real one checks: client
 * authentication (Basic header or body, never both), the PKCE verifier against the challenge it was
 * given, single-use codes, rotating refresh tokens.
 */
interface Seen {
  path: string;
  headers: IncomingMessage['headers'];
  contentType: string;
  fields: Record<string, string>;
}

const CLIENT = { clientId: 'switchboard-client', clientSecret: 'sEcReT+/=value-123' };
/** An end user's own OAuth app at the same provider (`oauth_client_id_override`). */
const OWN_APP = { client_id: 'their-app', client_secret: 'their-secret-value' };
const KNOWN_CLIENTS = new Map([
  [CLIENT.clientId, CLIENT.clientSecret],
  [OWN_APP.client_id, OWN_APP.client_secret],
]);

class FakeAuthServer extends LoopbackHttpFake {
  readonly seen: Seen[] = [];
  readonly codes = new Map<string, { challenge?: string; redirectUri: string }>();
  refreshTokens = new Set<string>(['rt-initial']);
  /** What the next token answer looks like; tests replace it. */
  answer: (fields: Record<string, string>) => { status: number; body: unknown; contentType?: string } =
    () => ({
      status: 200,
      body: {
        access_token: `at-${randomBytes(4).toString('hex')}`,
        token_type: 'bearer',
        expires_in: 3600,
        refresh_token: 'rt-next',
      },
    });
  expectedAuth: 'basic' | 'basic-form-encoded' | 'body' | 'custom' = 'body';

  /** What the authorization endpoint would remember when the end user consents. */
  issueCode(redirectUri: string, challenge?: string): string {
    const code = `code-${randomBytes(6).toString('hex')}`;
    this.codes.set(code, { redirectUri, ...(challenge ? { challenge } : {}) });
    return code;
  }

  protected async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const text = await requestBody(req);
    const contentType = req.headers['content-type'] ?? '';
    const url = new URL(req.url ?? '/', this.url);
    const fields: Record<string, string> = contentType.includes('json')
      ? (JSON.parse(text) as Record<string, string>)
      : Object.fromEntries(new URLSearchParams(text || url.search));
    this.seen.push({ path: url.pathname, headers: req.headers, contentType, fields });
    const send = (status: number, body: unknown, type = 'application/json') => {
      res.writeHead(status, { 'content-type': type });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    };

    if (url.pathname === '/hang') return; // never answers

    const authError = this.checkClientAuth(req, fields);
    if (authError) return send(401, { error: 'invalid_client', error_description: authError });

    if (fields['grant_type'] === 'authorization_code') {
      const code = this.codes.get(fields['code'] ?? '');
      this.codes.delete(fields['code'] ?? '');
      if (!code)
        return send(400, { error: 'invalid_grant', error_description: `unknown code ${fields['code']}` });
      if (code.redirectUri !== fields['redirect_uri'])
        return send(400, { error: 'invalid_grant', error_description: 'redirect_uri mismatch' });
      if (code.challenge) {
        const computed = createHash('sha256')
          .update(fields['code_verifier'] ?? '')
          .digest('base64url');
        if (computed !== code.challenge) {
          return send(400, {
            error: 'invalid_grant',
            error_description: `PKCE verification failed for ${fields['code_verifier']}`,
          });
        }
      }
    }
    if (fields['grant_type'] === 'refresh_token') {
      const token = fields['refresh_token'] ?? '';
      if (!this.refreshTokens.has(token)) {
        // Real servers echo more than they should; the client must not pass this on.
        return send(400, {
          error: 'invalid_grant',
          error_description: `refresh token ${token} is revoked (client ${CLIENT.clientSecret})`,
        });
      }
      this.refreshTokens.delete(token);
    }
    const answer = this.answer(fields);
    const body = answer.body as Record<string, unknown>;
    if (typeof body === 'object' && typeof body['refresh_token'] === 'string')
      this.refreshTokens.add(body['refresh_token']);
    send(answer.status, answer.body, answer.contentType);
  }

  private checkClientAuth(req: IncomingMessage, fields: Record<string, string>): string | undefined {
    const header = req.headers.authorization;
    const inBody = 'client_secret' in fields || 'client_id' in fields;
    if (this.expectedAuth === 'basic') {
      if (inBody) return 'client credentials must not also be in the body';
      const [id, secret] = Buffer.from((header ?? '').replace(/^Basic /, ''), 'base64')
        .toString('utf8')
        .split(/:(.*)/s);
      return known(id, secret) ? undefined : 'bad basic credentials';
    }
    if (this.expectedAuth === 'basic-form-encoded') {
      if (inBody) return 'client credentials must not also be in the body';
      const decoded = Buffer.from((header ?? '').replace(/^Basic /, ''), 'base64').toString('utf8');
      const [id, secret] = decoded.split(':').map((part) => decodeURIComponent(part.replace(/\+/g, ' ')));
      return known(id, secret) ? undefined : 'bad basic credentials (RFC 6749 form-encoded)';
    }
    if (this.expectedAuth === 'custom') {
      return known(fields['username'], fields['password']) ? undefined : 'bad username/password';
    }
    if (header) return 'unexpected Authorization header';
    return known(fields['client_id'], fields['client_secret']) ? undefined : 'bad client credentials';
  }
}

const known = (id: string | undefined, secret: string | undefined) =>
  id !== undefined && KNOWN_CLIENTS.get(id) === secret;

const provider = (server: FakeAuthServer, extra: Partial<ResolvedProvider> = {}): ResolvedProvider =>
  ({
    name: 'fake-oauth',
    display_name: 'Fake',
    categories: ['other'],
    docs: 'https://example.com/docs',
    auth_mode: 'OAUTH2',
    authorization_url: `${server.url}/authorize`,
    token_url: `${server.url}/token`,
    ...extra,
  }) as ResolvedProvider;

const pkce = () => {
  const verifier = randomBytes(24).toString('hex');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

async function failure(promise: Promise<unknown>): Promise<ProviderExchangeError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProviderExchangeError);
  return error as ProviderExchangeError;
}

describe('OAuth 2 token client against a fake authorization server', () => {
  const server = new FakeAuthServer();
  const redirectUri = 'https://switchboard.example/oauth/callback';

  beforeAll(async () => {
    // As the service runs with SWITCHBOARD_EGRESS_ALLOW=127.0.0.1 in the tests: the fake server is on loopback.
    configureProviderEgress('127.0.0.1');
    await server.start();
  });
  afterAll(async () => {
    await server.stop();
    await closeProviderEgress();
  });
  beforeEach(() => {
    server.expectedAuth = 'body';
    server.seen.length = 0;
  });

  it('exchanges a code with its PKCE verifier and keeps the raw response and token metadata', async () => {
    const { verifier, challenge } = pkce();
    const code = server.issueCode(redirectUri, challenge);
    server.answer = () => ({
      status: 200,
      body: {
        access_token: 'at-1',
        refresh_token: 'rt-1',
        expires_in: 3600,
        scope: 'read write',
        instance_url: 'https://na1.example.com',
      },
    });
    const before = Date.now();
    const { credentials, connectionConfig } = await exchangeAuthorizationCode({
      provider: provider(server, { token_response_metadata: ['instance_url'] }),
      client: CLIENT,
      code,
      redirectUri,
      codeVerifier: verifier,
    });
    expect(credentials).toMatchObject({ type: 'OAUTH2', access_token: 'at-1', refresh_token: 'rt-1' });
    expect(credentials.raw).toEqual(expect.objectContaining({ scope: 'read write', expires_in: 3600 }));
    const expiresAt = new Date(credentials.expires_at!).getTime();
    expect(expiresAt).toBeGreaterThanOrEqual(before + 3600_000 - 1000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 3600_000 + 1000);
    expect(connectionConfig).toEqual({ instance_url: 'https://na1.example.com' });
    expect(server.seen[0]?.fields).toMatchObject({
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirectUri,
      code_verifier: verifier,
    });
  });

  it('fails with the provider error, and without the verifier or secret in the message, when PKCE does not match', async () => {
    const { challenge } = pkce();
    const code = server.issueCode(redirectUri, challenge);
    const wrongVerifier = randomBytes(24).toString('hex');
    const error = await failure(
      exchangeAuthorizationCode({
        provider: provider(server),
        client: CLIENT,
        code,
        redirectUri,
        codeVerifier: wrongVerifier,
      }),
    );
    expect(error.code).toBe('invalid_credentials');
    expect(error.details).toMatchObject({
      stage: 'authorization_code',
      failure: 'rejected',
      providerStatus: 400,
      providerError: 'invalid_grant',
    });
    expect(error.message).toContain('invalid_grant');
    expect(error.message).not.toContain(wrongVerifier);
    expect(error.message).not.toContain(CLIENT.clientSecret);
  });

  it('keeps the end user’s own OAuth app as config_override', async () => {
    const code = server.issueCode(redirectUri);
    server.answer = () => ({ status: 200, body: { access_token: 'at-own' } });
    const { credentials } = await exchangeAuthorizationCode({
      provider: provider(server),
      client: CLIENT,
      code,
      redirectUri,
      clientIsOverride: true,
    });
    expect(credentials.config_override).toEqual({
      client_id: CLIENT.clientId,
      client_secret: CLIENT.clientSecret,
    });
    expect(credentials.expires_at).toBeUndefined();
  });

  it('takes a token under alternate_access_token_response_path (Slack user tokens)', async () => {
    const code = server.issueCode(redirectUri);
    server.answer = () => ({
      status: 200,
      body: {
        ok: true,
        authed_user: { id: 'U1', access_token: 'xoxp-user', refresh_token: 'xoxe-1', expires_in: 43200 },
      },
    });
    const { credentials } = await exchangeAuthorizationCode({
      provider: provider(server, { alternate_access_token_response_path: 'authed_user' }),
      client: CLIENT,
      code,
      redirectUri,
    });
    expect(credentials).toMatchObject({ access_token: 'xoxp-user', refresh_token: 'xoxe-1' });
    expect(credentials.raw).toMatchObject({ ok: true });
  });

  it('treats a 200 answer carrying an OAuth error (GitHub style) as a refusal', async () => {
    server.answer = () => ({
      status: 200,
      body: 'error=bad_verification_code&error_description=The+code+passed+is+incorrect+or+expired.',
      contentType: 'application/x-www-form-urlencoded',
    });
    const code = server.issueCode(redirectUri);
    const error = await failure(
      exchangeAuthorizationCode({ provider: provider(server), client: CLIENT, code, redirectUri }),
    );
    expect(error.details.providerError).toBe('bad_verification_code');
    expect(error.message).toContain('bad_verification_code');
    // What the provider wrote is for the logs, never the message an end user sees.
    expect(error.message).not.toContain('The code passed');
    expect(error.logDetail).toContain('The+code+passed+is+incorrect+or+expired.');
  });

  it('refreshes with HTTP Basic client authentication when the provider asks for it', async () => {
    server.expectedAuth = 'basic';
    server.refreshTokens.add('rt-basic');
    server.answer = () => ({
      status: 200,
      body: { access_token: 'at-basic', expires_in: 60, refresh_token: 'rt-basic-2' },
    });
    const { credentials } = await refreshOAuth2Token({
      provider: provider(server, { token_request_auth_method: 'basic' }),
      client: CLIENT,
      credentials: { type: 'OAUTH2', access_token: 'old', refresh_token: 'rt-basic', raw: {} },
    });
    expect(credentials).toMatchObject({ access_token: 'at-basic', refresh_token: 'rt-basic-2' });
    expect(server.seen[0]?.fields).toEqual({ grant_type: 'refresh_token', refresh_token: 'rt-basic' });
  });

  it('form-encodes the client in the Basic header for authorization_method header (RFC 6749 §2.3.1)', async () => {
    server.expectedAuth = 'basic-form-encoded';
    server.refreshTokens.add('rt-header');
    server.answer = () => ({ status: 200, body: { access_token: 'at-header' } });
    const { credentials } = await refreshOAuth2Token({
      provider: provider(server, { authorization_method: 'header' }),
      client: CLIENT,
      credentials: { type: 'OAUTH2', access_token: 'old', refresh_token: 'rt-header', raw: {} },
    });
    expect(credentials.access_token).toBe('at-header');
  });

  it('refreshes with the client in the body by default, keeping the refresh token a provider does not rotate', async () => {
    server.refreshTokens.add('rt-body');
    server.answer = () => ({ status: 200, body: { access_token: 'at-body', expires_in: 60 } });
    const { credentials } = await refreshOAuth2Token({
      provider: provider(server),
      client: CLIENT,
      credentials: { type: 'OAUTH2', access_token: 'old', refresh_token: 'rt-body', raw: {} },
    });
    expect(credentials).toMatchObject({ access_token: 'at-body', refresh_token: 'rt-body' });
    expect(server.seen[0]?.contentType).toBe('application/x-www-form-urlencoded');
  });

  it('sends a JSON body to providers with body_format json, to refresh_url with refresh_params', async () => {
    server.refreshTokens.add('rt-json');
    server.answer = () => ({ status: 200, body: { access_token: 'at-json', expires_in: 60 } });
    await refreshOAuth2Token({
      provider: provider(server, {
        body_format: 'json',
        refresh_url: `${server.url}/refresh`,
        token_params: { grant_type: 'authorization_code', audience: 'api' },
        refresh_params: { grant_type: 'refresh_token', tenant: '${connectionConfig.tenant}' },
      }),
      client: CLIENT,
      credentials: { type: 'OAUTH2', access_token: 'old', refresh_token: 'rt-json', raw: {} },
      connectionConfig: { tenant: 't-42' },
    });
    expect(server.seen[0]).toMatchObject({ path: '/refresh', contentType: 'application/json' });
    // refresh_params replace token_params entirely: no `audience`, and the grant stays refresh_token.
    expect(server.seen[0]?.fields).toEqual({
      grant_type: 'refresh_token',
      tenant: 't-42',
      refresh_token: 'rt-json',
      client_id: CLIENT.clientId,
      client_secret: CLIENT.clientSecret,
    });
  });

  it('uses the end user’s own client (config_override) to refresh, and keeps it', async () => {
    server.refreshTokens.add('rt-own');
    server.answer = () => ({ status: 200, body: { access_token: 'at-own-2' } });
    const { credentials } = await refreshOAuth2Token({
      provider: provider(server),
      client: CLIENT,
      credentials: {
        type: 'OAUTH2',
        access_token: 'x',
        refresh_token: 'rt-own',
        raw: {},
        config_override: OWN_APP,
      },
    });
    expect(server.seen[0]?.fields).toMatchObject({
      client_id: OWN_APP.client_id,
      client_secret: OWN_APP.client_secret,
    });
    expect(credentials).toMatchObject({ access_token: 'at-own-2', config_override: OWN_APP });
  });

  it('turns a refused refresh into refresh_token_external_error with no secret in the message', async () => {
    const error = await failure(
      refreshOAuth2Token({
        provider: provider(server),
        client: CLIENT,
        credentials: {
          type: 'OAUTH2',
          access_token: 'at-old-secret',
          refresh_token: 'rt-revoked-0123456789',
          raw: {},
        },
      }),
    );
    expect(error.code).toBe('refresh_token_external_error');
    expect(error.message).toContain('invalid_grant');
    expect(error.message).not.toContain('rt-revoked-0123456789');
    expect(error.message).not.toContain(CLIENT.clientSecret);
    expect(JSON.stringify(error.toWire())).not.toContain('rt-revoked');
  });

  it('fails fast, with a coded error, when the provider does not answer', async () => {
    const started = Date.now();
    const error = await failure(
      refreshOAuth2Token({
        provider: provider(server, { token_url: `${server.url}/hang` }),
        client: CLIENT,
        credentials: { type: 'OAUTH2', access_token: 'x', refresh_token: 'rt-initial', raw: {} },
        timeoutMs: 300,
      }),
    );
    expect(Date.now() - started).toBeLessThan(3000);
    expect(error.code).toBe('refresh_token_external_error');
    expect(error.details.failure).toBe('unreachable');
  });

  it('issues client-credentials tokens with Basic auth, interpolated token_params and scopes', async () => {
    server.expectedAuth = 'basic';
    server.answer = () => ({ status: 200, body: { access_token: 'cc-token', token_type: 'bearer' } });
    const before = Date.now();
    const { credentials } = await requestClientCredentialsToken({
      provider: provider(server, {
        auth_mode: 'OAUTH2_CC',
        token_request_auth_method: 'basic',
        scope_separator: ',',
        token_params: { grant_type: 'account_credentials', account_id: '${connectionConfig.accountId}' },
      }),
      client: CLIENT,
      connectionConfig: { accountId: 'acct-7' },
      scopes: ['a', 'b'],
    });
    expect(server.seen[0]?.fields).toEqual({
      grant_type: 'account_credentials',
      account_id: 'acct-7',
      scope: 'a,b',
    });
    expect(credentials).toMatchObject({
      type: 'OAUTH2_CC',
      token: 'cc-token',
      client_id: CLIENT.clientId,
      client_secret: CLIENT.clientSecret,
    });
    // No lifetime in the answer: a default one, so the vault re-issues it in time.
    expect(new Date(credentials.expires_at!).getTime()).toBeGreaterThan(before + 50 * 60_000);
  });

  it('reports wrong client credentials at connect time as invalid_credentials', async () => {
    const error = await failure(
      requestClientCredentialsToken({
        provider: provider(server, { auth_mode: 'OAUTH2_CC' }),
        client: { clientId: CLIENT.clientId, clientSecret: 'typed-wrong-secret' },
        connectionConfig: {},
      }),
    );
    expect(error.code).toBe('invalid_credentials');
    expect(error.details.providerError).toBe('invalid_client');
    expect(error.message).not.toContain('typed-wrong-secret');
  });

  it('refuses a token endpoint that the connection config points at a refused address, before a byte is sent', async () => {
    // 127.0.0.2 is loopback but outside the allow-list: what a private or metadata address would get.
    const outside = new FakeAuthServer();
    await outside.start('127.0.0.2');
    try {
      const error = await failure(
        requestClientCredentialsToken({
          provider: provider(server, {
            auth_mode: 'OAUTH2_CC',
            token_url: 'http://${connectionConfig.host}/token',
            // The host pattern lets loopback through, as an operator's catalog entry might for an
            // on-premises host: the egress policy is what refuses it here.
            connection_config: {
              host: { type: 'string', title: 'Host', pattern: '^127\\.0\\.0\\.[0-9]+:[0-9]+$' },
            },
          }),
          client: CLIENT,
          connectionConfig: { host: outside.url.replace('http://', '') },
        }),
      );
      expect(error.details.failure).toBe('unreachable');
      expect(error.message).toContain('refused by the egress policy');
      expect(error.message).not.toContain(CLIENT.clientSecret);
      expect(outside.seen).toHaveLength(0);
    } finally {
      await outside.stop();
    }
  });
});
