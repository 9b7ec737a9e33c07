// The foreground process of `npm start`: runs the Temporal dev server (unless one is already up) and
// every service, prefixes their logs, prints where to reach the gateway once all are ready, and stops
// everything on Ctrl-C. A service that dies takes the others down, so a broken start is never half-up.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';
import { join } from 'node:path';

const root = process.env.SWITCHBOARD_ROOT;
const env = process.env;
const colors = [36, 32, 33, 35, 34, 91, 92, 93, 96];
const children = [];
let stopping = false;

// NATS_PASSWORD_<USER> (from .data/dev.env) are the NATS server's; each process gets only its own user's.
const { natsPasswordVariable } = createRequire(join(root, 'packages/contracts/package.json'))(
  '@switchboard/contracts',
);
const ownNatsUser = (user) =>
  env[natsPasswordVariable(user)] ? { NATS_USER: user, NATS_PASSWORD: env[natsPasswordVariable(user)] } : {};

function start(name, command, args, extraEnv = {}) {
  const color = colors[children.length % colors.length];
  const childEnv = { ...env, ...extraEnv };
  for (const key of Object.keys(env)) if (key.startsWith('NATS_PASSWORD_')) delete childEnv[key];
  for (const [key, value] of Object.entries(childEnv)) if (value === undefined) delete childEnv[key];
  const child = spawn(command, args, { cwd: root, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  const prefix = `\x1b[${color}m${name.padEnd(24)}\x1b[0m│ `;
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on('line', (line) => process.stdout.write(`${prefix}${line}\n`));
  }
  child.on('exit', (code, signal) => {
    if (stopping) return;
    process.stdout.write(`${prefix}exited (${signal ?? code}); stopping everything\n`);
    void stopAll(1);
  });
  children.push({ name, child });
  return child;
}

async function stopAll(exitCode) {
  if (stopping) return;
  stopping = true;
  process.stdout.write('\nstopping services…\n');
  const running = children.filter(({ child }) => child.exitCode === null && child.signalCode === null);
  await Promise.all(
    running.map(
      ({ child }) =>
        new Promise((resolve) => {
          const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
          child.once('exit', () => {
            clearTimeout(kill);
            resolve();
          });
          child.kill('SIGTERM');
        }),
    ),
  );
  process.stdout.write('all stopped\n');
  process.exit(exitCode);
}

process.on('SIGINT', () => void stopAll(0));
process.on('SIGTERM', () => void stopAll(0));

if (env.SWITCHBOARD_START_TEMPORAL === '1') {
  start('temporal', env.SWITCHBOARD_TEMPORAL_BIN, [
    'server',
    'start-dev',
    '--db-filename',
    join(root, '.data/temporal/dev.db'),
    '--ip',
    '127.0.0.1',
    '--port',
    '7233',
    '--ui-port',
    '8233',
    '--log-level',
    'warn',
  ]);
  // Services connect to Temporal at boot; give the dev server its few seconds first.
  const { connect } = await import('node:net');
  const up = () =>
    new Promise((resolve) => {
      const socket = connect(7233, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
  for (let i = 0; i < 120 && !(await up()); i++) await new Promise((r) => setTimeout(r, 500));
}

const services = [
  'auth-connect',
  'connections-vault',
  'proxy',
  'functions-runtime',
  'sync-orchestrator',
  'webhook-relay',
  'gateway',
];
// `PORT` is the gateway's; another service listens on `<SERVICE>_PORT` (e.g. CONNECTIONS_VAULT_PORT) or its default.
const portOf = (service) =>
  service === 'gateway' ? env.PORT : env[`${service.toUpperCase().replaceAll('-', '_')}_PORT`];
// Node's command-line flags per service (infra/node-flags.json: the same in the images and the tests).
const NODE_FLAGS = JSON.parse(readFileSync(join(root, 'infra/node-flags.json'), 'utf8'));
const nodeFlags = (service) => NODE_FLAGS[service] ?? [];
for (const service of services) {
  start(service, process.execPath, [...nodeFlags(service), join(root, 'apps', service, 'dist/main.js')], {
    PORT: portOf(service),
    ...ownNatsUser(service),
  });
}
const worker = join(root, 'apps/sync-orchestrator/dist/worker.js');
if (existsSync(worker))
  start('sync-orchestrator-worker', process.execPath, [...nodeFlags('sync-orchestrator-worker'), worker], {
    PORT: undefined,
    ...ownNatsUser('sync-orchestrator-worker'),
  });

const gateway = `http://127.0.0.1:${env.PORT ?? 3003}`;
const deadline = Date.now() + 120_000;
let last = '';
while (!stopping && Date.now() < deadline) {
  try {
    const res = await fetch(`${gateway}/ready`);
    last = await res.text();
    if (res.ok) break;
  } catch (error) {
    last = error.message;
  }
  await new Promise((r) => setTimeout(r, 500));
}
if (!stopping) {
  if (Date.now() >= deadline) {
    process.stdout.write(`services not ready after 120 s: ${last}\n`);
    await stopAll(1);
  }
  const line = '─'.repeat(72);
  process.stdout.write(
    `\n${line}\n  Switchboard is ready\n\n` +
      `  Gateway        ${env.SWITCHBOARD_SERVER_URL}\n` +
      `  Secret key     ${env.SWITCHBOARD_SECRET_KEY}   (environment "dev")\n` +
      `  API docs       ${env.SWITCHBOARD_SERVER_URL}/docs\n` +
      `  Readiness      ${env.SWITCHBOARD_SERVER_URL}/ready\n` +
      `  Temporal UI    http://127.0.0.1:8233\n\n` +
      `  Try: curl -H "Authorization: Bearer ${env.SWITCHBOARD_SECRET_KEY}" ${env.SWITCHBOARD_SERVER_URL}/providers?search=git\n` +
      `  Ctrl-C stops everything.\n${line}\n\n`,
  );
}
