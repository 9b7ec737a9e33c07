import { randomBytes, randomUUID } from 'node:crypto';
import type { Stack } from '@switchboard/testing';
import type { Client } from 'pg';
import {
  consoleClient,
  consoleTables,
  COOKIE,
  importGithubConnection,
  oidcBrowser,
  PER_ADDRESS_PER_MIN,
  PER_EMAIL_PER_MIN,
  sessionCookieOf,
  signInWithSsoButton,
  startConsoleWorld,
  type ConsoleWorld,
  type Browser,
  type Me,
} from './support/console-browser';
import type { FakeOidcProvider } from './support/fake-oidc-provider';
import { call, expectError } from './support/http';
import { START_HOOK_TIMEOUT_MS } from './support/processes';

/**
 * The console's server side, through the gateway: people sign in with the first admin made by the real
 * CLI, sessions live in an HttpOnly cookie, writes need the session's CSRF token from the gateway's own
 * origin, and roles map onto the API's scopes.
 */
describe('console sign-in, sessions, roles and CSRF', () => {
  let stack: Stack;
  let db: Client;
  let idp: FakeOidcProvider;
  const run = randomUUID().slice(0, 8);
  const adminEmail = `admin-${run}@example.com`;
  const adminPassword = `first admin ${randomUUID()}`;
  let admin: Browser;
  const { consoleCall, as, signInRaw, signIn, integrationKeys, createWithCli, me, audit, ...client } =
    consoleClient(() => stack);
  const createUser = (role: string) => client.createUser(admin, role);
  const tables = consoleTables(() => db);

  let world: ConsoleWorld | undefined;
  beforeAll(async () => {
    world = await startConsoleWorld();
    ({ stack, db, idp } = world);
  }, START_HOOK_TIMEOUT_MS);
  afterAll(() => world?.stop());

  it('creates the first admin with the CLI (password on stdin); a weak password creates nobody', async () => {
    const weak = createWithCli(`weak-${run}@example.com`, 'admin', 'short\n');
    expect(weak.status).toBe(1);
    expect(weak.stderr).toContain('at least 12 characters');
    const asEmail = createWithCli(`same-${run}@example.com`, 'admin', `same-${run}@example.com\n`);
    expect(asEmail.status).toBe(1);
    expect(asEmail.stderr).toContain('must not be the email');
    const none = await tables.consoleUsersLike(`%-${run}@example.com`);
    expect(none).toHaveLength(0);

    const created = createWithCli(adminEmail.toUpperCase(), 'admin', `${adminPassword}\n`);
    expect(created.stderr).toBe('');
    expect(created.status).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ email: adminEmail, role: 'admin' });
    const rows = await tables.passwordHashes(adminEmail);
    expect(rows[0].password_hash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(rows[0].password_hash).not.toContain(adminPassword);

    // The same email again: refused, from the environment variable this time.
    const again = createWithCli(adminEmail, 'viewer', '', { SWITCHBOARD_CONSOLE_PASSWORD: adminPassword });
    expect(again.status).toBe(1);
    expect(again.stderr).toContain('already exists');
  });

  it('answers nothing without a session: console routes and public API routes alike', async () => {
    const planted = randomBytes(32).toString('base64url');
    for (const cookie of [undefined, planted, 'not-a-token']) {
      for (const [method, path] of [
        ['GET', '/console/api/me'],
        ['GET', '/console/api/users'],
        ['POST', '/console/api/sign-out'],
      ] as const) {
        expectError(
          await consoleCall(method, path, { cookie, environment: null }),
          401,
          'console_session_required',
        );
      }
      for (const [method, path] of [
        ['GET', '/integrations'],
        ['GET', '/connections'],
        ['GET', '/environment-variables'],
        ['GET', '/environment/api-keys'],
        ['POST', '/integrations'],
      ] as const) {
        const res = await consoleCall(method, path, { cookie, body: method === 'POST' ? {} : undefined });
        expectError(res, 401, cookie ? 'console_session_required' : 'missing_auth_header');
      }
    }
  });

  it('signs in with a fresh HttpOnly, Secure, SameSite=Strict cookie; a wrong password or unknown email is one 401', async () => {
    const wrong = await signInRaw(adminEmail, `${adminPassword}x`);
    const unknown = await signInRaw(`nobody-${run}@example.com`, adminPassword);
    for (const res of [wrong, unknown]) {
      expect(res.status).toBe(401);
      expect(res.headers.getSetCookie()).toEqual([]);
      expect(await res.json()).toEqual({
        error: { code: 'invalid_credentials', message: 'The email or the password is wrong' },
      });
    }

    const res = await signInRaw(adminEmail, adminPassword);
    expect(res.status).toBe(200);
    const cookies = res.headers.getSetCookie();
    expect(cookies).toHaveLength(1);
    const attributes = cookies[0]!.split(';').map((a) => a.trim());
    expect(attributes[0]).toMatch(new RegExp(`^${COOKIE}=[A-Za-z0-9_-]{43}$`));
    expect(
      attributes
        .slice(1)
        .map((a) => a.split('=')[0]!.toLowerCase())
        .sort(),
    ).toEqual(['httponly', 'max-age', 'path', 'samesite', 'secure'].sort());
    expect(attributes).toEqual(expect.arrayContaining(['HttpOnly', 'Secure', 'SameSite=Strict', 'Path=/']));
    const maxAge = Number(attributes.find((a) => a.startsWith('Max-Age='))!.slice(8));
    expect(maxAge).toBeGreaterThan(7 * 24 * 3600 - 60);
    expect(maxAge).toBeLessThanOrEqual(7 * 24 * 3600);

    const body = (await res.json()) as Me;
    expect(body).toEqual({
      user: { id: expect.any(String), email: adminEmail, role: 'admin' },
      csrf_token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      environments: expect.arrayContaining([{ name: 'dev' }, { name: 'prod' }]),
      scopes: expect.arrayContaining([
        'environment:connections:read_credentials',
        'environment:api_keys:write',
        'environment:settings:write',
      ]),
    });
    admin = { cookie: sessionCookieOf(res)!, csrf: body.csrf_token, me: body };
    // Only the cookie's hash is stored.
    const rows = await tables.sessionHashesOf(adminEmail);
    expect(rows.map((r) => r.token_hash).join()).not.toContain(admin.cookie);

    const own = await me(admin.cookie);
    expect(own.status).toBe(200);
    expect(own.body).toEqual(body);
  });

  it('never keeps a cookie planted before sign-in (session fixation)', async () => {
    const planted = randomBytes(32).toString('base64url');
    const res = await signInRaw(adminEmail, adminPassword, { cookie: `${COOKIE}=${planted}` });
    expect(res.status).toBe(200);
    const issued = sessionCookieOf(res)!;
    expect(issued).not.toBe(planted);
    expectError(await me(planted), 401, 'console_session_required');
    expect((await me(issued)).status).toBe(200);

    // A live session sent along is replaced, not reused, and ends.
    const again = await signInRaw(adminEmail, adminPassword, { cookie: `${COOKIE}=${issued}` });
    const next = sessionCookieOf(again)!;
    expect(next).not.toBe(issued);
    expectError(await me(issued), 401, 'console_session_required');
    expect((await me(next)).status).toBe(200);
  });

  it('refuses a cookie-authenticated write without, or with a wrong, X-CSRF-Token or from a foreign origin; nothing is stored', async () => {
    const body = (key: string) => ({
      provider: 'github',
      unique_key: key,
      credentials: { type: 'OAUTH2', client_id: 'c', client_secret: 's' },
    });
    const refused = [
      await consoleCall('POST', '/integrations', { cookie: admin.cookie, body: body(`csrf-none-${run}`) }),
      await consoleCall('POST', '/integrations', {
        cookie: admin.cookie,
        csrf: 'x'.repeat(43),
        body: body(`csrf-wrong-${run}`),
      }),
      await consoleCall('POST', '/integrations', {
        cookie: admin.cookie,
        // Another session's token is a wrong one too.
        csrf: (await signIn(adminEmail, adminPassword)).csrf,
        body: body(`csrf-other-${run}`),
      }),
      await consoleCall('POST', '/integrations', {
        cookie: admin.cookie,
        csrf: admin.csrf,
        headers: { origin: 'https://evil.example' },
        body: body(`csrf-origin-${run}`),
      }),
      await consoleCall('POST', '/integrations', {
        cookie: admin.cookie,
        csrf: admin.csrf,
        headers: { 'sec-fetch-site': 'cross-site' },
        body: body(`csrf-site-${run}`),
      }),
    ];
    for (const res of refused) expectError(res, 403, 'csrf_token_invalid');
    expect((await integrationKeys()).filter((k) => k.startsWith('csrf-'))).toEqual([]);

    // The same request with the token, from the gateway's own origin, goes through.
    const ok = await as(admin, 'POST', '/integrations', body(`csrf-ok-${run}`), { origin: stack.gatewayUrl });
    expect(ok.status).toBe(200);
    expect(await integrationKeys()).toContain(`csrf-ok-${run}`);

    // PATCH and DELETE the same way.
    const patch = await consoleCall('PATCH', `/integrations/csrf-ok-${run}`, {
      cookie: admin.cookie,
      body: { display_name: 'changed' },
    });
    expectError(patch, 403, 'csrf_token_invalid');
    const del = await consoleCall('DELETE', `/integrations/csrf-ok-${run}`, { cookie: admin.cookie });
    expectError(del, 403, 'csrf_token_invalid');
    const kept = await call(stack.gatewayUrl, 'GET', `/integrations/csrf-ok-${run}`, {
      key: stack.secretKey,
    });
    expect((kept.body as { data: { display_name?: string } }).data.display_name).not.toBe('changed');
    // Creating a console user is a write as well.
    const user = await consoleCall('POST', '/console/api/users', {
      cookie: admin.cookie,
      environment: null,
      body: { email: `csrf-user-${run}@example.com`, role: 'admin', password: 'long enough password' },
    });
    expectError(user, 403, 'csrf_token_invalid');
    const { rows } = await db.query('select 1 from auth.console_users where email = $1', [
      `csrf-user-${run}@example.com`,
    ]);
    expect(rows).toHaveLength(0);
  });

  it('names the environment in X-Switchboard-Environment: required, and unknown is 400', async () => {
    expectError(
      await consoleCall('GET', '/integrations', { cookie: admin.cookie, environment: null }),
      400,
      'invalid_headers',
    );
    expectError(
      await consoleCall('GET', '/integrations', { cookie: admin.cookie, environment: 'staging' }),
      400,
      'unknown_environment',
    );
    const prod = await consoleCall('GET', '/integrations', { cookie: admin.cookie, environment: 'prod' });
    expect(prod.status).toBe(200);
    // The integration made in dev is not in prod.
    expect(JSON.stringify(prod.body)).not.toContain(`csrf-ok-${run}`);
    const dev = await consoleCall('GET', '/integrations', { cookie: admin.cookie });
    expect(JSON.stringify(dev.body)).toContain(`csrf-ok-${run}`);
  });

  describe('roles', () => {
    const connectionId = `conn-${run}`;
    const integration = `gh-${run}`;
    const accessToken = `at-${randomUUID()}`;
    const clientSecret = `cs-${randomUUID()}`;

    beforeAll(() => importGithubConnection(stack, { integration, connectionId, accessToken, clientSecret }));

    it('a viewer reads but cannot write, cannot read credentials or variables, and cannot manage users', async () => {
      const made = await createUser('viewer');
      // An empty password never signs in.
      expect((await signInRaw(made.email, '')).status).toBe(401);
      const v = await signIn(made.email, made.password);
      expect(v.me.user.role).toBe('viewer');
      expect(v.me.scopes).toContain('environment:connections:read');
      expect(v.me.scopes).not.toContain('environment:connections:read_credentials');
      expect(v.me.scopes).not.toContain('environment:environment_variables:read');
      expect(v.me.scopes).not.toContain('environment:settings:read');
      expect(v.me.scopes.filter((s) => !s.endsWith(':read'))).toEqual([]);

      expect((await as(v, 'GET', '/integrations')).status).toBe(200);
      const create = await as(v, 'POST', '/integrations', {
        provider: 'github',
        unique_key: `viewer-${run}`,
      });
      expect(expectError(create, 403, 'forbidden').message).toContain('environment:integrations:write');
      expect(await integrationKeys()).not.toContain(`viewer-${run}`);

      const connection = await as(
        v,
        'GET',
        `/connections/${connectionId}?provider_config_key=${integration}`,
      );
      expect(connection.status).toBe(200);
      expect(connection.body).toMatchObject({ connection_id: connectionId });
      expect(connection.text).not.toContain(accessToken);
      // The same answer a key without the scope gets: an empty credentials object.
      expect((connection.body as { credentials?: object }).credentials ?? {}).toEqual({});
      const forced = await as(
        v,
        'GET',
        `/connections/${connectionId}?provider_config_key=${integration}&force_refresh=true`,
      );
      expectError(forced, 403, 'forbidden');
      const secret = await as(v, 'GET', `/integrations/${integration}?include=credentials`);
      expectError(secret, 403, 'forbidden');
      expectError(await as(v, 'GET', '/environment-variables'), 403, 'forbidden');
      // The environment's settings carry the webhook signing key.
      const settings = await as(v, 'GET', '/environment');
      expectError(settings, 403, 'forbidden');
      expect(settings.text).not.toMatch(/signing/i);
      expectError(await as(v, 'GET', '/environment/api-keys'), 403, 'forbidden');
      const proxied = await consoleCall('GET', '/proxy/user', {
        cookie: v.cookie,
        headers: { 'provider-config-key': integration, 'connection-id': connectionId },
      });
      expect(expectError(proxied, 403, 'forbidden').message).toContain('environment:proxy');

      expectError(await as(v, 'GET', '/console/api/users'), 403, 'forbidden');
      const made2 = await as(v, 'POST', '/console/api/users', {
        email: `by-viewer-${run}@example.com`,
        role: 'admin',
        password: 'long enough password',
      });
      expectError(made2, 403, 'forbidden');
      expectError(
        await as(v, 'PATCH', `/console/api/users/${v.me.user.id}`, { role: 'admin' }),
        403,
        'forbidden',
      );
      expectError(await as(v, 'DELETE', `/console/api/users/${admin.me.user.id}`), 403, 'forbidden');
      const { rows } = await db.query('select role from auth.console_users where id = $1', [v.me.user.id]);
      expect(rows[0].role).toBe('viewer');
    });

    it('a developer creates an integration but does not see credentials', async () => {
      const made = await createUser('developer');
      const d = await signIn(made.email, made.password);
      const create = await as(d, 'POST', '/integrations', { provider: 'github', unique_key: `dev-${run}` });
      expect(create.status).toBe(200);
      expect(await integrationKeys()).toContain(`dev-${run}`);
      const connection = await as(
        d,
        'GET',
        `/connections/${connectionId}?provider_config_key=${integration}`,
      );
      expect(connection.status).toBe(200);
      expect(connection.text).not.toContain(accessToken);
      expectError(await as(d, 'GET', `/integrations/${integration}?include=credentials`), 403, 'forbidden');
      expect((await as(d, 'GET', '/environment-variables')).status).toBe(200);
      expectError(await as(d, 'GET', '/console/api/users'), 403, 'forbidden');
      // The proxy takes the cookie too (a connection that does not exist: nothing leaves for a provider).
      const proxied = await consoleCall('GET', '/proxy/user', {
        cookie: d.cookie,
        headers: { 'provider-config-key': integration, 'connection-id': `missing-${run}` },
      });
      expectError(proxied, 404, 'unknown_connection');
    });

    it('an admin reads credentials, and each read is audited with who, when and what', async () => {
      const before = new Date(Date.now() - 1000);
      const connection = await as(
        admin,
        'GET',
        `/connections/${connectionId}?provider_config_key=${integration}`,
      );
      expect(connection.status).toBe(200);
      expect(connection.body).toMatchObject({ credentials: { access_token: accessToken } });
      const secret = await as(admin, 'GET', `/integrations/${integration}?include=credentials`);
      expect(secret.status).toBe(200);
      expect(secret.text).toContain(clientSecret);

      const rows = await tables.credentialsReads(admin.me.user.id);
      expect(rows).toEqual([
        expect.objectContaining({
          user_email: adminEmail,
          action: 'connection.read_credentials',
          target: { connection_id: connectionId, provider_config_key: integration },
        }),
        expect.objectContaining({
          user_email: adminEmail,
          action: 'integration.read_credentials',
          target: { unique_key: integration },
        }),
      ]);
      for (const row of rows) expect(row.created_at.getTime()).toBeGreaterThanOrEqual(before.getTime());
      // A program's read with a secret key is not a person's: not recorded here.
      await call(stack.gatewayUrl, 'GET', `/connections/${connectionId}?provider_config_key=${integration}`, {
        key: stack.secretKey,
      });
      const after = await tables.credentialsReadCount(admin.me.user.id);
      expect(after[0].n).toBe(2);
    });

    it("lists the environment's API keys without secrets", async () => {
      const res = await as(admin, 'GET', '/environment/api-keys');
      expect(res.status).toBe(200);
      expect(res.text).not.toContain(stack.secretKey);
      const keys = (res.body as { api_keys: { name: string; key_suffix: string; scopes: string[] }[] })
        .api_keys;
      expect(keys).toContainEqual(
        expect.objectContaining({ key_suffix: stack.secretKey.slice(-4), created_at: expect.any(String) }),
      );
    });

    it('user management is admin only; a role change or deletion ends that user’s sessions; the last admin stays', async () => {
      const made = await createUser('viewer');
      const first = await signIn(made.email, made.password);
      const listed = await as(admin, 'GET', '/console/api/users');
      expect(listed.status).toBe(200);
      expect((listed.body as { users: { email: string }[] }).users.map((u) => u.email)).toEqual(
        expect.arrayContaining([adminEmail, made.email]),
      );
      expect(listed.text).not.toMatch(/password|argon2/);

      const promoted = await as(admin, 'PATCH', `/console/api/users/${made.id}`, { role: 'developer' });
      expect(promoted.status).toBe(200);
      expect(promoted.body).toMatchObject({ id: made.id, role: 'developer' });
      expectError(await as(first, 'GET', '/integrations'), 401, 'console_session_required');
      const second = await signIn(made.email, made.password);
      expect(second.me.user.role).toBe('developer');

      const deleted = await as(admin, 'DELETE', `/console/api/users/${made.id}`);
      expect({ status: deleted.status, body: deleted.body }).toEqual({
        status: 200,
        body: expect.objectContaining({ id: made.id, email: made.email }),
      });
      expectError(await as(second, 'GET', '/console/api/me'), 401, 'console_session_required');
      expect((await signInRaw(made.email, made.password)).status).toBe(401);

      expectError(
        await as(admin, 'PATCH', `/console/api/users/${admin.me.user.id}`, { role: 'viewer' }),
        409,
        'conflict',
      );
      expectError(await as(admin, 'DELETE', `/console/api/users/${admin.me.user.id}`), 409, 'conflict');
      const weak = await as(admin, 'POST', '/console/api/users', {
        email: `weak2-${run}@example.com`,
        role: 'viewer',
        password: 'too short',
      });
      expect(expectError(weak, 400, 'invalid_body').errors).toEqual([
        expect.objectContaining({ path: ['password'] }),
      ]);
    });
  });

  it('shows an admin the audit log, newest first and paged: sign-ins, users, roles, credentials reads', async () => {
    const made = await createUser('viewer');
    await signIn(made.email, made.password);
    expect((await as(admin, 'PATCH', `/console/api/users/${made.id}`, { role: 'developer' })).status).toBe(
      200,
    );

    const first = await audit(admin, '?limit=3');
    expect(first.status).toBe(200);
    expect(first.body.data.map((e) => [e.action, e.user_email, e.environment, e.target])).toEqual([
      [
        'console.role_changed',
        adminEmail,
        null,
        { user_id: made.id, email: made.email, from: 'viewer', to: 'developer' },
      ],
      ['console.sign_in', made.email, null, { method: 'password' }],
      ['console.user_created', adminEmail, null, { user_id: made.id, email: made.email, role: 'viewer' }],
    ]);
    expect(first.body.next_cursor).toBe(String(first.body.data[2]!.id));
    const second = await audit(admin, `?limit=3&cursor=${first.body.next_cursor}`);
    expect(second.body.data).toHaveLength(3);
    expect(Math.max(...second.body.data.map((e) => e.id))).toBeLessThan(first.body.data[2]!.id);

    // The credentials reads of the roles tests, in the environment they were made in.
    const reads = await audit(admin, '?action=connection.read_credentials');
    expect(reads.body.data.length).toBeGreaterThanOrEqual(1);
    for (const event of reads.body.data) {
      expect(event).toMatchObject({ action: 'connection.read_credentials', environment: 'dev' });
    }

    expectError((await audit(admin, '?cursor=abc')).res, 400, 'invalid_query_params');
    expectError((await audit(admin, '?action=everything')).res, 400, 'invalid_query_params');
    const developer = await signIn(made.email, made.password);
    const refused = await audit(developer, '');
    expectError(refused.res, 403, 'forbidden');
    expect(refused.res.text).not.toContain(adminEmail);
    expectError(
      await consoleCall('GET', '/console/api/audit', { environment: null }),
      401,
      'console_session_required',
    );
  });

  it('ends a session at its absolute expiry and after the idle timeout', async () => {
    const expired = await signIn(adminEmail, adminPassword);
    const idle = await signIn(adminEmail, adminPassword);
    await tables.expire(expired.cookie);
    await tables.idle(idle.cookie);
    for (const browser of [expired, idle]) {
      expectError(await as(browser, 'GET', '/integrations'), 401, 'console_session_required');
      expectError(await as(browser, 'GET', '/console/api/me'), 401, 'console_session_required');
    }
  });

  it('signs out: needs the CSRF header, deletes the session and clears the cookie', async () => {
    const browser = await signIn(adminEmail, adminPassword);
    expectError(
      await consoleCall('POST', '/console/api/sign-out', { cookie: browser.cookie, environment: null }),
      403,
      'csrf_token_invalid',
    );
    expect((await as(browser, 'GET', '/console/api/me')).status).toBe(200);

    const res = await as(browser, 'POST', '/console/api/sign-out');
    expect(res.status).toBe(204);
    expect(res.headers.getSetCookie()).toEqual([
      `${COOKIE}=; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=0`,
    ]);
    const rows = await tables.sessionsOf(browser.cookie);
    expect(rows).toHaveLength(0);
    expectError(await as(browser, 'GET', '/console/api/me'), 401, 'console_session_required');
    expectError(await as(browser, 'GET', '/integrations'), 401, 'console_session_required');
  });

  it('throttles sign-in attempts per email, right password included once the window is spent', async () => {
    const made = await createUser('viewer');
    const statuses: number[] = [];
    for (let i = 0; i < PER_EMAIL_PER_MIN; i++)
      statuses.push((await signInRaw(made.email, 'wrong password here')).status);
    expect(statuses).toEqual(Array(PER_EMAIL_PER_MIN).fill(401));
    // Any spelling of the address counts against the same window.
    const limited = await signInRaw(made.email.toUpperCase(), made.password);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(((await limited.json()) as { error: { code: string } }).error.code).toBe('too_many_request');
    expect(limited.headers.getSetCookie()).toEqual([]);
    // Another email from the same address still signs in.
    expect((await signInRaw(adminEmail, adminPassword)).status).toBe(200);
  });

  it('throttles sign-in attempts per client address, right or wrong, whichever email', async () => {
    const address = { 'x-forwarded-for': '198.51.100.7' };
    const statuses: number[] = [];
    for (let i = 0; i < PER_ADDRESS_PER_MIN - 1; i++) {
      statuses.push((await signInRaw(`guess-${i}-${run}@example.com`, 'some password here', address)).status);
    }
    statuses.push((await signInRaw(adminEmail, adminPassword, address)).status);
    expect(statuses).toEqual([...Array(PER_ADDRESS_PER_MIN - 1).fill(401), 200]);
    const limited = await signInRaw(adminEmail, adminPassword, address);
    expect(limited.status).toBe(429);
    expect(limited.headers.getSetCookie()).toEqual([]);
    // The same person from another address is not held back.
    expect((await signInRaw(adminEmail, adminPassword)).status).toBe(200);
  });

  it('offers the OIDC provider on the sign-in page, and a click there signs the user in (Chromium)', async () => {
    const config = await consoleCall('GET', '/console/api/config', { environment: null });
    expect(config.status).toBe(200);
    expect(config.body).toEqual({ oidc: { enabled: true, label: 'Sign in with SSO' } });

    idp.signInAs({ email: adminEmail, email_verified: true });
    await signInWithSsoButton(stack, `${adminEmail} (admin)`);
    const rows = await tables.lastSignIn(admin.me.user.id);
    expect(rows).toEqual([{ target: { method: 'oidc' } }]);
  });

  it('signs in through the OIDC provider the user whose verified email it vouches for, in the browser that started', async () => {
    const { begin, finish } = oidcBrowser(stack, idp);

    idp.signInAs({ email: adminEmail.toUpperCase(), email_verified: true });
    const first = await begin();
    // Another browser (no binding cookie, or another attempt's) is refused before the code is redeemed.
    const elsewhere = await finish(first.callback);
    expect(elsewhere.status).toBe(400);
    expect(((await elsewhere.json()) as { error: { code: string } }).error.code).toBe('invalid_query_params');
    const other = await begin();
    expect((await finish(first.callback, other.cookie)).status).toBe(400);
    expect(elsewhere.headers.getSetCookie().some((l) => l.startsWith(`${COOKIE}=`))).toBe(false);

    const done = await finish(first.callback, first.cookie);
    expect(done.status).toBe(302);
    expect(done.headers.get('location')).toBe('/console');
    const issued = sessionCookieOf(done)!;
    expect(issued).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(done.headers.getSetCookie()).toEqual(
      expect.arrayContaining([expect.stringMatching(/^switchboard_console_oidc=; .*Max-Age=0$/)]),
    );
    const signedIn = await me(issued);
    expect(signedIn.status).toBe(200);
    expect(signedIn.body).toMatchObject({ user: { email: adminEmail, role: 'admin' } });

    // The same code again is refused by the provider: no second session.
    const replay = await finish(first.callback, first.cookie);
    expect(replay.status).toBe(401);
    expect(sessionCookieOf(replay)).toBeUndefined();
    expect(idp.refusedTokenRequests()).toBe(1);

    // An email the provider has not verified, or one no console user has, signs nobody in.
    for (const user of [
      { email: adminEmail, email_verified: false },
      { email: `stranger-${run}@example.com`, email_verified: true },
    ]) {
      idp.signInAs(user);
      const attempt = await begin();
      const res = await finish(attempt.callback, attempt.cookie);
      expect(res.status).toBe(401);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_credentials');
      expect(sessionCookieOf(res)).toBeUndefined();
    }
  });
});
