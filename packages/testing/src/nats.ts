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

export interface AuthenticatedNats {
  url: string;
  /** Every user's password (admin included). */
  passwords: Record<NatsUser, string>;
  process: ChildProcess;
  logs(): string;
  stop(): Promise<void>;
}

/**
 * A private NATS server with JetStream, run exactly as deployments run it: the generated
 * infra/nats/nats.conf (one user per service, subject permissions, no anonymous access) with fresh
 * random passwords. For tests of the permissions themselves, whatever server the rest of the suite uses.
 */
export async function startAuthenticatedNats(): Promise<AuthenticatedNats> {
  const port = await freePort();
  const storeDir = mkdtempSync(join(tmpdir(), 'switchboard-nats-'));
  const passwords = Object.fromEntries(
    NATS_USERS.map((user) => [user, `pw${randomBytes(18).toString('hex')}`]),
  ) as Record<NatsUser, string>;
  const env = { ...process.env };
  for (const user of NATS_USERS) env[natsPasswordVariable(user)] = passwords[user];
  const conf = join(repoRoot(), 'infra/nats/nats.conf');
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
  while (!(await portOpen(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`nats-server with ${conf} did not start: ${output.join('')}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `nats://127.0.0.1:${port}`,
    passwords,
    process: child,
    logs: () => output.join(''),
    stop,
  };
}
