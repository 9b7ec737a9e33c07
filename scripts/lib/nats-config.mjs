// The NATS server configuration, generated from the permissions table in packages/contracts
// (src/nats-permissions.ts): one user per service with its subject allow-lists. Needs the built
// contracts package (`pnpm turbo run build --filter=@switchboard/contracts`).
//
//   node scripts/lib/nats-config.mjs                       rewrite infra/nats/nats.conf and the Helm chart's
//                                                          copy, infra/helm/switchboard/files/nats.conf (`pnpm nats:config`)
//   node scripts/lib/nats-config.mjs --check               exit 1 when either is out of date
//   node scripts/lib/nats-config.mjs --out F [--no-auth-user U]   write elsewhere (npm test's private server)
//   node scripts/lib/nats-config.mjs --passwords [--existing F]   print `NATS_PASSWORD_<USER>=<random>` lines
//                                                          for every user not already set in file F
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const { NATS_USERS, natsPasswordVariable, renderNatsServerConfig } = createRequire(
  join(root, 'packages/contracts/package.json'),
)('@switchboard/contracts');
const committed = join(root, 'infra/nats/nats.conf');
// Helm reads files inside the chart only: the chart carries its own copy (its development NATS loads it).
const chartCopy = join(root, 'infra/helm/switchboard/files/nats.conf');
const args = process.argv.slice(2);
const value = (flag) => {
  const i = args.indexOf(flag);
  return i >= 0 ? args[i + 1] : undefined;
};

if (args.includes('--passwords')) {
  const existingFile = value('--existing');
  const existing = existingFile && existsSync(existingFile) ? readFileSync(existingFile, 'utf8') : '';
  for (const user of NATS_USERS) {
    const name = natsPasswordVariable(user);
    if (!new RegExp(`^${name}=.`, 'm').test(existing))
      process.stdout.write(`${name}=pw${randomBytes(24).toString('hex')}\n`); // a letter first: see envFragments.nats
  }
} else if (args.includes('--check')) {
  for (const file of [committed, chartCopy]) {
    const current = existsSync(file) ? readFileSync(file, 'utf8') : '';
    if (current !== renderNatsServerConfig()) {
      console.error(
        `${file.slice(root.length + 1)} is out of date with packages/contracts: run \`pnpm nats:config\``,
      );
      process.exit(1);
    }
  }
} else {
  const out = value('--out');
  const noAuthUser = value('--no-auth-user');
  if (noAuthUser !== undefined && !NATS_USERS.includes(noAuthUser)) {
    console.error(`--no-auth-user: unknown user ${noAuthUser} (users: ${NATS_USERS.join(', ')})`);
    process.exit(1);
  }
  for (const file of out ? [out] : [committed, chartCopy]) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, renderNatsServerConfig({ noAuthUser }));
  }
}
