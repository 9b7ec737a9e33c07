#!/usr/bin/env node
// Checks the Docker setup without a Docker engine (the dev machines and CI have none).
//
//   node infra/validate-compose.mjs
//
// Always (plain file checks):
//   - every service in apps/ (an app with a `start` script) has infra/docker/<app>.Dockerfile and its
//     .dockerignore, and the migration job has infra/docker/migrate.Dockerfile;
//   - the stages the app Dockerfiles share are still the same text (so BuildKit shares them),
//     and every .dockerignore is the same;
//   - docker-compose.yml has a service for every app, built from that app's Dockerfile.
//   - node's flags in each app image's CMD, in each app's package.json `start` script and in the worker's
//     compose command are infra/node-flags.json's.
//   - metrics: every ./infra file compose mounts exists; the collector has a metrics pipeline whose
//     exporters are defined, and Prometheus scrapes the port its prometheus exporter listens on;
//     Grafana's provisioning names a datasource uid and the dashboards folder compose mounts; every
//     dashboard JSON parses, has unique panel ids, a query on every panel against that datasource,
//     balanced brackets, and names only metrics the code defines (instrument names found in
//     apps/ and packages/, spelled as the collector's Prometheus exporter spells them).
//   - NATS: infra/nats/nats.conf exists, has an admin user and no anonymous access; the nats service
//     loads it and requires every password variable it names; each service connects as its own user.
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
      // A service is an app with a `start` script; apps/console is static files the gateway serves.
      .filter(
        (name) => !!JSON.parse(readFileSync(join(appsDir, name, 'package.json'), 'utf8')).scripts?.start,
      )
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
// Node's command-line flags per service: infra/node-flags.json is what npm start and the tests give; each
// app image's CMD, each app's `start` script and the worker's compose command must give the same.
const nodeFlagsFile = join(root, 'infra', 'node-flags.json');
if (check(existsSync(nodeFlagsFile), `${rel(nodeFlagsFile)} exists`)) {
  const nodeFlags = JSON.parse(readFileSync(nodeFlagsFile, 'utf8'));
  const flagsOfCommand = (command) => {
    const args = JSON.parse(command);
    return args[0] === 'node' ? args.slice(1, -1) : null;
  };
  for (const { app, text } of texts) {
    const cmds = [...text.matchAll(/^CMD (\[.*\])\s*$/gm)];
    const flags = cmds.length ? flagsOfCommand(cmds[cmds.length - 1][1]) : null;
    const want = nodeFlags[app] ?? [];
    check(
      JSON.stringify(flags) === JSON.stringify(want),
      `${app}.Dockerfile's CMD gives node the flags of infra/node-flags.json`,
      `CMD flags ${JSON.stringify(flags)}, node-flags.json ${JSON.stringify(want)}`,
    );
    // `pnpm start` in the app's folder runs the service the same way (isolated-vm needs --no-node-snapshot).
    const manifest = join(root, 'apps', app, 'package.json');
    const start = existsSync(manifest)
      ? JSON.parse(readFileSync(manifest, 'utf8')).scripts?.start
      : undefined;
    const startArgs = typeof start === 'string' ? start.trim().split(/\s+/) : [];
    const startFlags = startArgs[0] === 'node' ? startArgs.slice(1, -1) : null;
    check(
      JSON.stringify(startFlags) === JSON.stringify(want),
      `apps/${app}/package.json's start script gives node the flags of infra/node-flags.json`,
      `start flags ${JSON.stringify(startFlags)}, node-flags.json ${JSON.stringify(want)}`,
    );
  }
  const compose = existsSync(composeFile) ? readFileSync(composeFile, 'utf8') : '';
  const worker = compose.match(
    /^  sync-orchestrator-worker:\n(?:    .*\n|\s*\n)*?    command: (\[.*\])\s*$/m,
  );
  const workerFlags = worker ? flagsOfCommand(worker[1].replace(/'/g, '"')) : null;
  check(
    JSON.stringify(workerFlags) === JSON.stringify(nodeFlags['sync-orchestrator-worker'] ?? []),
    'the sync-orchestrator-worker compose command gives node the flags of infra/node-flags.json',
    `command flags ${JSON.stringify(workerFlags)}`,
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

// ---- metrics: collector, Prometheus, Grafana -------------------------------------------------------
const composeText = existsSync(composeFile) ? readFileSync(composeFile, 'utf8') : '';
for (const [, source] of composeText.matchAll(/^\s*-\s*'?\.\/(infra\/[^:'\s]+):/gm)) {
  check(existsSync(join(root, source)), `compose mounts ${source}, which exists`);
}

/** The lines of a top-level YAML section (`name:` in column 0) up to the next one. */
function yamlSection(text, name) {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => l === `${name}:`);
  if (start < 0) return null;
  const end = lines.findIndex((l, i) => i > start && /^[A-Za-z_]/.test(l));
  return lines.slice(start + 1, end < 0 ? undefined : end);
}
const collectorFile = join(root, 'infra', 'otel-collector.yaml');
const collector = existsSync(collectorFile) ? readFileSync(collectorFile, 'utf8') : '';
const exporterNames = new Set(
  (yamlSection(collector, 'exporters') ?? [])
    .map((l) => /^ {2}([A-Za-z0-9_/-]+):/.exec(l)?.[1])
    .filter(Boolean),
);
const serviceLines = (yamlSection(collector, 'service') ?? []).join('\n');
const metricsPipeline = /^ {4}metrics:\n((?: {6}.*\n?)+)/m.exec(serviceLines)?.[1] ?? '';
const metricsExporters = /exporters:\s*\[([^\]]*)\]/.exec(metricsPipeline)?.[1];
if (
  check(metricsExporters !== undefined, 'infra/otel-collector.yaml has a metrics pipeline with exporters')
) {
  const listed = metricsExporters
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  const missing = listed.filter((e) => !exporterNames.has(e));
  check(
    listed.length > 0 && missing.length === 0,
    'the metrics pipeline exports through defined exporters',
    missing.join(', '),
  );
}
const promPort = /^ {2}prometheus:\n(?: {4}.*\n)*? {4}endpoint: [^:\s]+:(\d+)/m.exec(collector)?.[1];
const prometheusFile = join(root, 'infra', 'prometheus.yml');
if (
  check(
    promPort !== undefined && existsSync(prometheusFile),
    "the collector's prometheus exporter and infra/prometheus.yml exist",
  )
) {
  check(
    readFileSync(prometheusFile, 'utf8').includes(`otel-collector:${promPort}`),
    `infra/prometheus.yml scrapes otel-collector:${promPort}`,
  );
}

// Instrument names from the code, as Prometheus names (dots to underscores, `_seconds` for unit s,
// `_total` for counters, `_bucket/_count/_sum` for histograms).
function sourceFiles(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (name === 'node_modules' || name === 'dist') return [];
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.spec.ts') ? [path] : [];
  });
}
const knownMetrics = new Set();
const instrument =
  /(createHistogram|createCounter|createUpDownCounter|createObservableGauge|durationHistogram)\(\s*(?:meter,\s*)?'([a-z0-9_.]+)'(?=([\s\S]{0,300}))/g;
for (const file of [...sourceFiles(join(root, 'apps')), ...sourceFiles(join(root, 'packages'))]) {
  for (const [, kind, name, after] of readFileSync(file, 'utf8').matchAll(instrument)) {
    const base = name.replace(/\./g, '_');
    if (kind === 'durationHistogram' || kind === 'createHistogram') {
      const seconds = kind === 'durationHistogram' || /unit: 's'/.test(after.split(/\n\);|\}\);/)[0]);
      const stem = seconds ? `${base}_seconds` : base;
      for (const suffix of ['_bucket', '_count', '_sum']) knownMetrics.add(stem + suffix);
    } else if (kind === 'createCounter') knownMetrics.add(`${base}_total`);
    else knownMetrics.add(base);
  }
}
check(knownMetrics.size > 0, `found ${knownMetrics.size} metric series names in the code`);

const grafanaDir = join(root, 'infra', 'grafana');
const datasourceFiles = sourceFilesOf(join(grafanaDir, 'provisioning', 'datasources'), '.yaml');
const datasourceUids = new Set(
  datasourceFiles.flatMap((f) =>
    [...readFileSync(f, 'utf8').matchAll(/^\s+uid:\s*(\S+)/gm)].map((m) => m[1]),
  ),
);
check(
  datasourceUids.size > 0,
  'Grafana provisions a datasource with a uid',
  datasourceFiles.map(rel).join(', '),
);
const dashboardProviders = sourceFilesOf(join(grafanaDir, 'provisioning', 'dashboards'), '.yaml');
const providerPaths = dashboardProviders.flatMap((f) =>
  [...readFileSync(f, 'utf8').matchAll(/^\s+path:\s*(\S+)/gm)].map((m) => m[1]),
);
check(
  providerPaths.length > 0 &&
    providerPaths.every((p) => composeText.includes(`./infra/grafana/dashboards:${p}:ro`)),
  'the Grafana dashboard provider reads the folder compose mounts infra/grafana/dashboards on',
  providerPaths.join(', '),
);
function sourceFilesOf(dir, ext) {
  return existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.endsWith(ext))
        .map((f) => join(dir, f))
    : [];
}
function balanced(text) {
  const pairs = { ')': '(', ']': '[', '}': '{' };
  const stack = [];
  for (const c of text.replace(/"(?:[^"\\]|\\.)*"/g, '""')) {
    if ('([{'.includes(c)) stack.push(c);
    else if (c in pairs && stack.pop() !== pairs[c]) return false;
  }
  return stack.length === 0;
}
const dashboards = sourceFilesOf(join(grafanaDir, 'dashboards'), '.json');
check(dashboards.length > 0, `found ${dashboards.length} Grafana dashboard(s) in infra/grafana/dashboards`);
for (const file of dashboards) {
  let dashboard;
  try {
    dashboard = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    check(false, `${rel(file)} is valid JSON`, String(error));
    continue;
  }
  const panels = (dashboard.panels ?? []).flatMap((p) => [p, ...(p.panels ?? [])]);
  const ids = panels.map((p) => p.id);
  const problems = [];
  if (typeof dashboard.uid !== 'string' || !dashboard.title) problems.push('no uid or title');
  if (new Set(ids).size !== ids.length || ids.some((id) => typeof id !== 'number'))
    problems.push('panel ids missing or repeated');
  for (const panel of panels.filter((p) => p.type !== 'row')) {
    const where = `panel "${panel.title}"`;
    if (!panel.gridPos) problems.push(`${where}: no gridPos`);
    if (!Array.isArray(panel.targets) || panel.targets.length === 0) problems.push(`${where}: no query`);
    for (const target of panel.targets ?? []) {
      const uid = target.datasource?.uid ?? panel.datasource?.uid;
      if (!datasourceUids.has(uid)) problems.push(`${where}: datasource uid ${uid} is not provisioned`);
      if (typeof target.expr !== 'string' || !target.expr.trim()) problems.push(`${where}: empty expr`);
      else if (!balanced(target.expr)) problems.push(`${where}: unbalanced brackets in ${target.expr}`);
      // Metric names only: label matchers `{...}` and groupings `by (...)` name labels.
      const names = (target.expr ?? '')
        .replace(/\{[^}]*\}/g, '')
        .replace(/\b(?:by|without)\s*\([^)]*\)/g, '');
      for (const [name] of names.matchAll(/\b(?:switchboard|http_server|messaging)_[a-z0-9_]+/g)) {
        if (!knownMetrics.has(name)) problems.push(`${where}: no instrument in the code makes ${name}`);
      }
    }
  }
  for (const variable of dashboard.templating?.list ?? []) {
    if (variable.datasource && !datasourceUids.has(variable.datasource.uid))
      problems.push(
        `variable ${variable.name}: datasource uid ${variable.datasource.uid} is not provisioned`,
      );
  }
  check(
    problems.length === 0,
    `${rel(file)}: ${panels.length} panels, every query valid`,
    problems.join('\n'),
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

// ---- NATS users -------------------------------------------------------------------------------------
// infra/nats/nats.conf (generated from packages/contracts) has one user per service; the nats service
// must load it and hold every password variable it names, and each service must connect as its own user.
const natsConf = join(root, 'infra', 'nats', 'nats.conf');
if (check(existsSync(natsConf), 'infra/nats/nats.conf exists (pnpm nats:config)')) {
  const confText = readFileSync(natsConf, 'utf8');
  const users = [...confText.matchAll(/^\s*user: "([^"]+)"\n\s*password: \$(\w+)$/gm)].map(
    ([, user, variable]) => ({
      user,
      variable,
    }),
  );
  check(
    users.some((u) => u.user === 'admin') && !/^no_auth_user/m.test(confText),
    `infra/nats/nats.conf has ${users.length} users, admin among them, and no anonymous access`,
  );
  const services = composeServices(composeText);
  const nats = (services.get('nats') ?? []).join('\n');
  check(
    nats.includes('./infra/nats/nats.conf:/etc/nats/nats.conf:ro') &&
      /'-c', '\/etc\/nats\/nats\.conf'/.test(nats),
    'the nats service mounts infra/nats/nats.conf and starts with -c /etc/nats/nats.conf',
  );
  const missing = users.filter(
    ({ variable }) => !new RegExp(`^\\s+${variable}: \\$\\{${variable}:\\?`, 'm').test(nats),
  );
  check(
    missing.length === 0,
    'the nats service requires every password variable of infra/nats/nats.conf',
    missing.map((u) => u.variable).join(', '),
  );
  for (const { user, variable } of users.filter((u) => u.user !== 'admin')) {
    const body = (services.get(user) ?? []).join('\n');
    check(
      new RegExp(`^\\s+NATS_USER: ${user}$`, 'm').test(body) &&
        new RegExp(`^\\s+NATS_PASSWORD: \\$\\{${variable}:\\?`, 'm').test(body),
      `service "${user}" connects to NATS as its own user (NATS_USER: ${user}, NATS_PASSWORD from ${variable})`,
    );
  }
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
  for (const [, name] of composeText.matchAll(/\$\{(NATS_PASSWORD_\w+):\?/g)) env[name] ||= 'placeholder';
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
