import { spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { repoRoot, startStack, type Stack } from '@switchboard/testing';
import { Client } from 'pg';
import { launchChromium } from './chromium';
import { startFakeOidcProvider, type FakeOidcProvider } from './fake-oidc-provider';
import { call, type ApiResponse } from './http';
import { STACK_READY_TIMEOUT_MS } from './processes';

/** The console's session cookie. */
export const COOKIE = 'switchboard_console';
/** The sign-in throttles the console stack runs with. */
export const PER_EMAIL_PER_MIN = 4;
export const PER_ADDRESS_PER_MIN = 5;

export interface Me {
  user: { id: string; email: string; role: string };
  csrf_token: string;
  environments: { name: string }[];
  scopes: string[];
}

/** One browser: its console cookie and CSRF token, sent the way the console's SPA sends them. */
export interface Browser {
  cookie: string;
  csrf: string;
  me: Me;
}

/** A page of the console's audit log. */
export interface AuditPage {
  data: { id: number; action: string; user_email: string; environment: string | null; target: unknown }[];
  next_cursor: string | null;
}

/**
 * A stack whose console signs in through `idp` as well as with passwords, with the sign-in throttles
 * above, and whose gateway trusts one proxy hop (so a test chooses each request's client address).
 */
export function startConsoleStack(idp: FakeOidcProvider): Promise<Stack> {
  return startStack({
    serviceEnv: {
      'auth-connect': {
        SWITCHBOARD_CONSOLE_OIDC_ISSUER: idp.issuer,
        SWITCHBOARD_CONSOLE_OIDC_CLIENT_ID: idp.clientId,
        SWITCHBOARD_CONSOLE_OIDC_CLIENT_SECRET: idp.clientSecret,
        NODE_EXTRA_CA_CERTS: idp.caFile,
      },
      gateway: {
        SWITCHBOARD_CONSOLE_SIGN_IN_PER_EMAIL_PER_MIN: String(PER_EMAIL_PER_MIN),
        SWITCHBOARD_CONSOLE_SIGN_IN_PER_IP_PER_MIN: String(PER_ADDRESS_PER_MIN),
        SWITCHBOARD_TRUST_PROXY: '1',
      },
    },
    readyTimeoutMs: STACK_READY_TIMEOUT_MS,
  });
}

/**
 * The gateway trusts one proxy hop here, so each sign-in comes from an address of its own unless a test
 * names one: only the per-address test spends an address's window.
 */
/** A fake identity provider, a console stack signing in through it, and a client of the stack's database. */
export interface ConsoleWorld {
  idp: FakeOidcProvider;
  stack: Stack;
  db: Client;
  stop(): Promise<void>;
}

/** Starts a `ConsoleWorld` (what is started is stopped again if a later part fails). */
export async function startConsoleWorld(): Promise<ConsoleWorld> {
  const idp = await startFakeOidcProvider();
  let stack: Stack | undefined;
  try {
    stack = await startConsoleStack(idp);
    const db = new Client({ connectionString: stack.databaseUrl });
    await db.connect();
    const started = stack;
    return {
      idp,
      stack,
      db,
      stop: async () => {
        await db.end();
        await started.stop();
        await idp.stop();
      },
    };
  } catch (error) {
    await stack?.stop();
    await idp.stop();
    throw error;
  }
}

export const someAddress = () => `10.${randomBytes(3).join('.')}`;

/** The console session cookie a response sets, if any. */
export const sessionCookieOf = (res: Response): string | undefined => {
  const line = res.headers.getSetCookie().find((l) => l.startsWith(`${COOKIE}=`));
  return line?.split(';')[0]?.slice(COOKIE.length + 1);
};

/** The console's requests as its SPA makes them, against `stack()` (read at each call). */
export function consoleClient(stack: () => Stack) {
  /** A request as the console sends it: the cookie, the environment, and the CSRF token on writes. */
  const consoleCall = (
    method: string,
    path: string,
    options: {
      cookie?: string;
      csrf?: string;
      environment?: string | null;
      body?: unknown;
      headers?: Record<string, string>;
    } = {},
  ): Promise<ApiResponse> =>
    call(stack().gatewayUrl, method, path, {
      body: options.body,
      headers: {
        ...(options.cookie ? { cookie: `${COOKIE}=${options.cookie}` } : {}),
        ...(options.csrf ? { 'x-csrf-token': options.csrf } : {}),
        ...(options.environment === null
          ? {}
          : { 'x-switchboard-environment': options.environment ?? 'dev' }),
        ...options.headers,
      },
    });
  const as = (
    browser: Browser,
    method: string,
    path: string,
    body?: unknown,
    extra: Record<string, string> = {},
  ) => consoleCall(method, path, { cookie: browser.cookie, csrf: browser.csrf, body, headers: extra });
  const signInRaw = (email: string, password: string, headers: Record<string, string> = {}) =>
    fetch(`${stack().gatewayUrl}/console/api/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': someAddress(), ...headers },
      body: JSON.stringify({ email, password }),
    });
  const signIn = async (email: string, password: string): Promise<Browser> => {
    const res = await signInRaw(email, password);
    const body = (await res.json()) as Me;
    expect({ status: res.status, body }).toEqual({
      status: 200,
      body: expect.objectContaining({ user: expect.anything() }),
    });
    return { cookie: sessionCookieOf(res)!, csrf: body.csrf_token, me: body };
  };
  /** A console user of `role` made by `admin`, with its password. */
  const createUser = async (
    admin: Browser,
    role: string,
  ): Promise<{ id: string; email: string; password: string }> => {
    const email = `${role}-${randomUUID().slice(0, 8)}@example.com`;
    const password = `pw for ${role} ${randomUUID()}`;
    const res = await as(admin, 'POST', '/console/api/users', { email, role, password });
    expect({ status: res.status, body: res.body }).toEqual({
      status: 201,
      body: expect.objectContaining({ email, role, id: expect.any(String) }),
    });
    return { id: (res.body as { id: string }).id, email, password };
  };
  /** The unique keys of the environment's integrations, read with the secret key. */
  const integrationKeys = async (): Promise<string[]> => {
    const res = await call(stack().gatewayUrl, 'GET', '/integrations', { key: stack().secretKey });
    return (res.body as { data: { unique_key: string }[] }).data.map((i) => i.unique_key);
  };
  /** `switchboard console users <args>` with the real CLI, `input` on its stdin. */
  const cli = (args: string[], input: string, env: Record<string, string> = {}) =>
    spawnSync(
      process.execPath,
      [join(repoRoot(), 'packages/cli/dist/main.js'), 'console', 'users', ...args],
      {
        input,
        encoding: 'utf8',
        env: { ...process.env, DATABASE_URL: stack().databaseUrl, SWITCHBOARD_CONSOLE_PASSWORD: '', ...env },
      },
    );
  /** `switchboard console users create` of `email` with `role` in the stack's account. */
  const createWithCli = (email: string, role: string, input: string, env: Record<string, string> = {}) =>
    cli(['create', '--email', email, '--role', role, '--account', stack().accountName], input, env);
  /** GET /console/api/me with `cookie`, as the console asks before it knows an environment. */
  const me = (cookie: string) => consoleCall('GET', '/console/api/me', { cookie, environment: null });
  /** The audit log as `who` reads it, with `query` (`?limit=...` or empty). */
  const audit = async (who: Browser, query: string) => {
    const res = await consoleCall('GET', `/console/api/audit${query}`, {
      cookie: who.cookie,
      environment: null,
    });
    return { status: res.status, body: res.body as AuditPage, res };
  };
  return { consoleCall, as, signInRaw, signIn, createUser, integrationKeys, createWithCli, me, audit };
}

/** Creates a GitHub integration with `clientSecret` and imports a connection to it holding `accessToken`. */
export async function importGithubConnection(
  stack: Stack,
  c: { integration: string; connectionId: string; accessToken: string; clientSecret: string },
): Promise<void> {
  await call(stack.gatewayUrl, 'POST', '/integrations', {
    key: stack.secretKey,
    body: {
      provider: 'github',
      unique_key: c.integration,
      credentials: { type: 'OAUTH2', client_id: 'cid', client_secret: c.clientSecret },
    },
  });
  const imported = await call(stack.gatewayUrl, 'POST', '/connections', {
    key: stack.secretKey,
    body: {
      provider_config_key: c.integration,
      connection_id: c.connectionId,
      credentials: { type: 'OAUTH2', access_token: c.accessToken },
    },
  });
  expect(imported.status).toBe(201);
}

/** A browser's OIDC sign-in: started at the gateway, approved at `idp`, and its callback opened. */
export function oidcBrowser(stack: Stack, idp: FakeOidcProvider) {
  /** The browser at the provider (its certificate is the fake's own). */
  const atProvider = (url: string) =>
    new Promise<{ status: number; location: string }>((resolve, reject) => {
      httpsRequest(url, { ca: readFileSync(idp.caFile) }, (res) => {
        res.resume();
        resolve({ status: res.statusCode ?? 0, location: res.headers.location ?? '' });
      })
        .on('error', reject)
        .end();
    });
  const begin = async () => {
    const res = await fetch(`${stack.gatewayUrl}/console/api/oidc/start`, {
      redirect: 'manual',
      headers: { 'x-forwarded-for': someAddress() },
    });
    expect(res.status).toBe(302);
    const location = res.headers.get('location')!;
    expect(location.startsWith(`${idp.issuer}/authorize?`)).toBe(true);
    expect(new URL(location).searchParams.get('code_challenge_method')).toBe('S256');
    const line = res.headers.getSetCookie()[0]!;
    expect(line).toMatch(/; HttpOnly; Secure; SameSite=Lax; Path=\/console\/api\/oidc; Max-Age=600$/);
    const back = await atProvider(location);
    expect(back.status).toBe(302);
    expect(back.location.startsWith(`${stack.gatewayUrl}/console/api/oidc/callback?`)).toBe(true);
    return { cookie: line.split(';')[0]!, callback: back.location };
  };
  const finish = (callback: string, cookie?: string) =>
    fetch(callback, { redirect: 'manual', headers: cookie ? { cookie } : {} });
  return { begin, finish };
}

/** What the console stores, read and changed the way the tests need (a session is named by its cookie). */
export function consoleTables(db: () => Client) {
  const bySession = "token_hash = encode(sha256($1::bytea), 'hex')";
  const rows = async (sql: string, params: unknown[]) => (await db().query(sql, params)).rows;
  return {
    consoleUsersLike: (pattern: string) =>
      rows('select 1 from auth.console_users where email like $1', [pattern]),
    passwordHashes: (email: string) =>
      rows('select password_hash from auth.console_users where email = $1', [email]),
    sessionHashesOf: (email: string) =>
      rows(
        'select s.token_hash from auth.console_sessions s join auth.console_users u on u.id = s.user_id where u.email = $1',
        [email],
      ),
    sessionsOf: (cookie: string) => rows(`select 1 from auth.console_sessions where ${bySession}`, [cookie]),
    /** Moves a session past its absolute expiry. */
    expire: (cookie: string) =>
      rows(`update auth.console_sessions set expires_at = now() - interval '1 second' where ${bySession}`, [
        cookie,
      ]),
    /** Moves a session's last use past the idle timeout. */
    idle: (cookie: string) =>
      rows(
        `update auth.console_sessions set last_seen_at = now() - interval '12 hours 1 minute' where ${bySession}`,
        [cookie],
      ),
    credentialsReads: (userId: string) =>
      rows(
        "select user_id, user_email, action, target, environment_id, created_at from auth.console_audit_events where user_id = $1 and action like '%.read_credentials' order by id",
        [userId],
      ),
    credentialsReadCount: (userId: string) =>
      rows(
        "select count(*)::int as n from auth.console_audit_events where user_id = $1 and action like '%.read_credentials'",
        [userId],
      ),
    lastSignIn: (userId: string) =>
      rows(
        "select target from auth.console_audit_events where user_id = $1 and action = 'console.sign_in' order by id desc limit 1",
        [userId],
      ),
  };
}

/**
 * Opens the console's sign-in page in Chromium, clicks the SSO button, and waits to land on the
 * integrations page signed in as `signedInAs` (the fake provider's certificate is its own; the browser's
 * address is its own too, for the throttles).
 */
export async function signInWithSsoButton(stack: Stack, signedInAs: string): Promise<void> {
  const chromium = await launchChromium();
  try {
    const context = await chromium.newContext({
      ignoreHTTPSErrors: true,
      extraHTTPHeaders: { 'x-forwarded-for': someAddress() },
    });
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(`${stack.gatewayUrl}/console/sign-in`);
    const button = page.getByRole('link', { name: 'Sign in with SSO' });
    await button.click();
    await page.waitForURL(`${stack.gatewayUrl}/console/integrations`);
    await page.getByTestId('signed-in-as').filter({ hasText: signedInAs }).waitFor();
  } finally {
    await chromium.close();
  }
}
