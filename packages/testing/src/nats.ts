import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { NATS_USERS, natsPasswordVariable, type NatsUser } from '@switchboard/contracts';
import { freePort, portOpen } from './ports';
import { repoRoot } from './repo';

export type NatsPasswords = Partial<Record<NatsUser, string>>;

/** The NATS users' passwords a test run was given (`NATS_PASSWORD_<USER>`, exported by `npm test`). */
export function natsPasswordsFrom(env: NodeJS.ProcessEnv): NatsPasswords {
  const passwords: NatsPasswords = {};
  for (const user of NATS_USERS) {
    const value = env[natsPasswordVariable(user)];
    if (value) passwords[user] = value;
  }
  return passwords;
}

/** A process's NATS_USER / NATS_PASSWORD for `user`, or nothing when the server takes anonymous clients. */
export function natsCredentials(passwords: NatsPasswords, user: NatsUser): Record<string, string> {
  const password = passwords[user];
  return password ? { NATS_USER: user, NATS_PASSWORD: password } : {};
}

/** Variables a spawned process must not inherit: the other users' passwords, the test runner's own user. */
export function withoutNatsSecrets(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const kept = { ...env };
  for (const user of NATS_USERS) delete kept[natsPasswordVariable(user)];
  delete kept.NATS_USER;
  delete kept.NATS_PASSWORD;
  return kept;
}

/**
 * The nats-server binary: $NATS_SERVER_BIN (scripts/test.sh sets it), else the one the project's setup
 * built (`~/.cache/switchboard/tools/nats-server-<version>/`, newest first), else the first one on PATH or
 * in /usr/sbin, /usr/local/bin.
 */
export function natsServerBinary(): string {
  if (process.env.NATS_SERVER_BIN) return process.env.NATS_SERVER_BIN;
  const tools = process.env.SWITCHBOARD_TOOLS_DIR ?? join(homedir(), '.cache', 'switchboard', 'tools');
  const built = existsSync(tools)
    ? readdirSync(tools)
        .filter((name) => name.startsWith('nats-server-v'))
        .sort((a, b) => b.localeCompare(a, 'en', { numeric: true }))
        .map((name) => join(tools, name, 'nats-server'))
        .find((p) => existsSync(p))
    : undefined;
  if (built) return built;
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/local/bin', '/usr/bin'];
  const found = dirs.map((d) => join(d, 'nats-server')).find((p) => existsSync(p));
  if (!found) throw new Error('nats-server not found: install it or set NATS_SERVER_BIN');
  return found;
}

/** A nats-server process this package started, with JetStream in a store directory of its own. */
export interface NatsServer {
  url: string;
  process: ChildProcess;
  /** What the server wrote to stdout and stderr. */
  logs(): string;
  /** Stops the server and removes its store directory. */
  stop(): Promise<void>;
}

export interface NatsServerOptions {
  /** The configuration file the server runs (`-c`). */
  conf: string;
  /** The server's environment: the configuration reads the users' passwords from it. */
  env?: NodeJS.ProcessEnv;
  /** What the server is for, in the error when it does not start. */
  purpose?: string;
  /**
   * How many ports to try: another process may take a free port between the check and the server's bind,
   * and the server then exits; the next try takes another port.
   */
  attempts?: number;
}

/**
 * Starts nats-server with JetStream on a free loopback port, from `conf`, and waits until the port takes
 * connections.
 */
export async function spawnNatsServer(options: NatsServerOptions): Promise<NatsServer> {
  const { conf, env = process.env, purpose = `nats-server with ${conf}`, attempts = 3 } = options;
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const storeDir = mkdtempSync(join(tmpdir(), 'switchboard-nats-'));
    const child = spawn(
      natsServerBinary(),
      ['-c', conf, '-a', '127.0.0.1', '-p', String(port), '-js', '-sd', storeDir],
      { env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const output: string[] = [];
    const collect = (chunk: Buffer) => output.push(chunk.toString('utf8'));
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    const stop = () =>
      new Promise<void>((resolve) => {
        const done = () => {
          rmSync(storeDir, { recursive: true, force: true });
          resolve();
        };
        if (child.exitCode !== null || child.signalCode !== null) return done();
        child.once('exit', done);
        child.kill('SIGTERM');
      });
    const deadline = Date.now() + 10_000;
    let open = false;
    while (child.exitCode === null && Date.now() < deadline && !(open = await portOpen(port))) {
      await new Promise((r) => setTimeout(r, 25));
    }
    if (open && child.exitCode === null) {
      return { url: `nats://127.0.0.1:${port}`, process: child, logs: () => output.join(''), stop };
    }
    await stop();
    if (attempt >= attempts) throw new Error(`${purpose} did not start: ${output.join('').slice(-2000)}`);
  }
}

export interface AuthenticatedNats extends NatsServer {
  /** Every user's password (admin included). */
  passwords: Record<NatsUser, string>;
}

/**
 * A private NATS server with JetStream, run exactly as deployments run it: the generated
 * infra/nats/nats.conf (one user per service, subject permissions, no anonymous access) with fresh
 * random passwords. For tests of the permissions themselves, whatever server the rest of the suite uses.
 */
export async function startAuthenticatedNats(): Promise<AuthenticatedNats> {
  const passwords = Object.fromEntries(
    NATS_USERS.map((user) => [user, `pw${randomBytes(18).toString('hex')}`]),
  ) as Record<NatsUser, string>;
  const env = { ...process.env };
  for (const user of NATS_USERS) env[natsPasswordVariable(user)] = passwords[user];
  const server = await spawnNatsServer({ conf: join(repoRoot(), 'infra/nats/nats.conf'), env });
  return { ...server, passwords };
}
