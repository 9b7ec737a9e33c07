#!/usr/bin/env node
// Checks the Docker setup without a Docker engine (the dev machines and CI have none).
//
//   node infra/validate-compose.mjs
//
// Always (plain file checks):
//   - every app in apps/ has infra/docker/<app>.Dockerfile and its .dockerignore, and the
//     migration job has infra/docker/migrate.Dockerfile;
//   - the stages the app Dockerfiles share are still the same text (so BuildKit shares them),
//     and every .dockerignore is the same;
//   - docker-compose.yml has a service for every app, built from that app's Dockerfile.
// When a compose CLI is available (`docker compose` or `docker-compose`; `config` needs no
// daemon): `config --quiet` on docker-compose.yml, alone and with infra/compose.providers.yml,
// and every app is in `config --services`. Otherwise it prints
// "skipped: docker compose not available" for that part.
// Exits non-zero when a check fails. Plain Node, no dependencies.

import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dockerDir = join(root, 'infra', 'docker');
const composeFile = join(root, 'docker-compose.yml');
const providersOverlay = join(root, 'infra', 'compose.providers.yml');
// Extra services that must exist besides one per app.
const EXTRA_SERVICES = ['migrate', 'seed', 'sync-orchestrator-worker'];

let passed = 0;
let failed = 0;
const rel = (p) => relative(root, p) || '.';
function check(ok, message, detail) {
  if (ok) {
    passed += 1;
    console.log(`ok   ${message}`);
  } else {
    failed += 1;
    console.log(`FAIL ${message}${detail ? `\n     ${detail.replace(/\n/g, '\n     ')}` : ''}`);
  }
  return ok;
}

// ---- apps --------------------------------------------------------------------------------------
const appsDir = join(root, 'apps');
const apps = existsSync(appsDir)
  ? readdirSync(appsDir)
      .filter((name) => statSync(join(appsDir, name)).isDirectory())
      .filter((name) => existsSync(join(appsDir, name, 'package.json')))
      .sort()
  : [];
check(apps.length > 0, `found ${apps.length} apps in apps/: ${apps.join(', ')}`);

// ---- Dockerfiles -------------------------------------------------------------------------------
const appDockerfiles = [];
for (const app of apps) {
  const file = join(dockerDir, `${app}.Dockerfile`);
  if (check(existsSync(file), `${rel(file)} exists`)) appDockerfiles.push({ app, file });
  const ignore = `${file}.dockerignore`;
  check(existsSync(ignore), `${rel(ignore)} exists`);
}
const migrateFile = join(dockerDir, 'migrate.Dockerfile');
check(existsSync(migrateFile), `${rel(migrateFile)} exists`);
check(existsSync(`${migrateFile}.dockerignore`), `${rel(migrateFile)}.dockerignore exists`);

// The shared part of an app Dockerfile: from `ARG NODE_IMAGE` up to the runtime stage, with the
// app name in `ARG APP=` blanked. The base stage alone is shared with migrate.Dockerfile too.
function section(text, startMarker, endMarker) {
  const start = text.indexOf(startMarker);
  const end = text.indexOf(endMarker, start);
  if (start < 0 || end < 0) return null;
  return text.slice(start, end).replace(/^ARG APP=.*$/m, 'ARG APP=<app>');
}
const texts = appDockerfiles.map(({ app, file }) => ({ app, text: readFileSync(file, 'utf8') }));
for (const { app, text } of texts) {
  check(
    new RegExp(`^ARG APP=${app}$`, 'm').test(text),
    `${app}.Dockerfile builds @switchboard/${app} (ARG APP=${app})`,
  );
}
if (texts.length > 1) {
  const shared = texts.map(({ app, text }) => ({
    app,
    part: section(text, 'ARG NODE_IMAGE', '# ---- runtime'),
  }));
  const reference = shared[0];
  const drifted = shared.filter(({ part }) => part === null || part !== reference.part).map(({ app }) => app);
  check(
    drifted.length === 0,
    'app Dockerfiles share identical base/deps/build stages',
    drifted.length ? `differs from ${reference.app}.Dockerfile: ${drifted.join(', ')}` : undefined,
  );
}
if (texts.length > 0 && existsSync(migrateFile)) {
  const baseOf = (text) => section(text, 'ARG NODE_IMAGE', '# ---- ');
  const appBase = baseOf(texts[0].text);
  const migrateBase = baseOf(readFileSync(migrateFile, 'utf8'));
  check(
    appBase !== null && appBase === migrateBase,
    'migrate.Dockerfile shares the base stage of the app Dockerfiles',
  );
}
const ignoreFiles = existsSync(dockerDir)
  ? readdirSync(dockerDir)
      .filter((f) => f.endsWith('.Dockerfile.dockerignore'))
      .sort()
  : [];
if (ignoreFiles.length > 1) {
  const first = readFileSync(join(dockerDir, ignoreFiles[0]), 'utf8');
  const different = ignoreFiles.filter((f) => readFileSync(join(dockerDir, f), 'utf8') !== first);
  check(
    different.length === 0,
    'every infra/docker/*.Dockerfile.dockerignore is the same',
    different.length ? `differs from ${ignoreFiles[0]}: ${different.join(', ')}` : undefined,
  );
}

// ---- docker-compose.yml, read as text ------------------------------------------------------------
// No YAML parser (no dependencies): top-level keys start in column 0, services are the keys
// indented by exactly two spaces under `services:`.
function composeServices(text) {
  const services = new Map();
  let inServices = false;
  let current = null;
  for (const line of text.split('\n')) {
    if (/^\S/.test(line) && !line.startsWith('#')) {
      inServices = /^services:\s*(#.*)?$/.test(line);
      current = null;
      continue;
    }
    if (!inServices) continue;
    const key = /^ {2}([A-Za-z0-9._-]+):\s*(#.*)?$/.exec(line);
    if (key) {
      current = key[1];
      services.set(current, []);
    } else if (current) {
      services.get(current).push(line);
    }
  }
  return services;
}
if (check(existsSync(composeFile), `${rel(composeFile)} exists`)) {
  const services = composeServices(readFileSync(composeFile, 'utf8'));
  for (const app of apps) {
    const body = services.get(app);
    if (check(body !== undefined, `docker-compose.yml has a service "${app}"`)) {
      const dockerfile = `infra/docker/${app}.Dockerfile`;
      check(
        body.some((line) =>
          new RegExp(`^\\s+dockerfile:\\s*${dockerfile.replace(/[.]/g, '\\.')}\\s*$`).test(line),
        ),
        `service "${app}" is built from ${dockerfile}`,
      );
    }
  }
  for (const name of EXTRA_SERVICES) check(services.has(name), `docker-compose.yml has a service "${name}"`);
}

// ---- docker compose config (only when a compose CLI exists) --------------------------------------
function findCompose() {
  const candidates = [
    ['docker', ['compose']],
    ['docker-compose', []],
  ];
  for (const [cmd, prefix] of candidates) {
    const r = spawnSync(cmd, [...prefix, 'version'], { encoding: 'utf8' });
    if (r.status === 0) return { cmd, prefix, version: r.stdout.trim().split('\n')[0] };
  }
  return null;
}
const compose = existsSync(composeFile) ? findCompose() : null;
if (!compose) {
  console.log('skipped: docker compose not available');
} else {
  console.log(`using ${compose.version}`);
  // `config` refuses to interpolate while a required secret is unset: give it placeholders when
  // neither the environment nor a .env sets them (the placeholders are never printed or used).
  const env = {
    ...process.env,
    SWITCHBOARD_MASTER_KEYS:
      process.env.SWITCHBOARD_MASTER_KEYS || `1:${Buffer.alloc(32).toString('base64')}`,
    SWITCHBOARD_SECRET_KEY: process.env.SWITCHBOARD_SECRET_KEY || '00000000-0000-4000-8000-000000000000',
  };
  const run = (files, args) =>
    spawnSync(
      compose.cmd,
      [...compose.prefix, '--project-directory', root, ...files.flatMap((f) => ['-f', f]), ...args],
      {
        cwd: root,
        env,
        encoding: 'utf8',
      },
    );
  const base = run([composeFile], ['config', '--quiet']);
  check(
    base.status === 0,
    'docker compose config --quiet (docker-compose.yml)',
    (base.stderr || base.stdout || '').trim(),
  );
  if (existsSync(providersOverlay)) {
    const overlay = run([composeFile, providersOverlay], ['config', '--quiet']);
    check(
      overlay.status === 0,
      'docker compose config --quiet (+ infra/compose.providers.yml)',
      (overlay.stderr || overlay.stdout || '').trim(),
    );
  }
  const listed = run([composeFile], ['config', '--services']);
  if (check(listed.status === 0, 'docker compose config --services', (listed.stderr || '').trim())) {
    const names = new Set(
      listed.stdout
        .split('\n')
        .map((s) => s.trim())
        .filter(Boolean),
    );
    for (const name of [...apps, ...EXTRA_SERVICES])
      check(names.has(name), `compose resolves a service "${name}"`);
  }
}

console.log(`validate-compose: ${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
