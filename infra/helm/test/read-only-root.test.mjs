// What the chart promises of every pod, tried on the built services: each starts with its root
// filesystem read-only and only a fresh /tmp writable (as `readOnlyRootFilesystem: true` and the chart's
// emptyDir give it), answers /ready (the worker: polls Temporal), and on SIGTERM exits within the time its
// Deployment's terminationGracePeriodSeconds leaves after the preStop pause. Each serves its own /metrics
// (the production values' `metrics.exporter: prometheus`), and the series, renamed by the chart's
// ServiceMonitor, are the ones the dashboard and the alerts query.
//
// Runs each service from dist/ in a private mount namespace (`unshare -m`, root only: CI and the dev
// machines run as root) against the test infrastructure (TEST_DATABASE_URL, TEST_NATS_URL,
// TEST_TEMPORAL_ADDRESS, TEST_REDIS_URL, NATS_PASSWORD_<USER>, as `npm test` sets them). Skipped, with the
// reason, where one of those is missing.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { KUBE, chart, helm, helmBuilt, run, validatorBin } from './helm-tools.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '../../..');
const nodeFlags = JSON.parse(readFileSync(join(root, 'infra/node-flags.json'), 'utf8'));
const values = readFileSync(join(root, 'infra/helm/switchboard/values.yaml'), 'utf8');
const grace = Math.min(
  ...[...values.matchAll(/terminationGracePeriodSeconds: (\d+)/g)].map((m) => Number(m[1])),
);
const preStop = Number(/^preStopSleepSeconds: (\d+)/m.exec(values)?.[1]);

// The engines each service uses, as the chart's "switchboard.components" gives them.
const SERVICES = {
  gateway: { app: 'gateway', env: ['redis', 'internalToken'] },
  'auth-connect': { app: 'auth-connect', env: ['database', 'masterKeys'], connectPort: true },
  'connections-vault': { app: 'connections-vault', env: ['database', 'masterKeys'] },
  proxy: { app: 'proxy', env: ['internalToken'] },
  'functions-runtime': { app: 'functions-runtime', env: ['internalToken'] },
  'sync-orchestrator': { app: 'sync-orchestrator', env: ['database', 'masterKeys', 'temporal'] },
  'sync-orchestrator-worker': {
    app: 'sync-orchestrator',
    entry: 'dist/worker.js',
    env: ['database', 'masterKeys', 'temporal'],
  },
  'webhook-relay': { app: 'webhook-relay', env: ['database', 'masterKeys'] },
};

const needed = [
  'TEST_DATABASE_URL',
  'TEST_NATS_URL',
  'TEST_TEMPORAL_ADDRESS',
  'TEST_REDIS_URL',
  'TEST_MASTER_KEYS',
];
const missing = needed.filter((v) => !process.env[v]);
const isRoot = process.getuid?.() === 0;
const unshare = spawnSync('unshare', ['-m', 'true']).status === 0;
const built = Object.values(SERVICES).every((s) =>
  existsSync(join(root, 'apps', s.app, s.entry ?? 'dist/main.js')),
);
const skip = missing.length
  ? `needs ${missing.join(', ')} (npm test sets them)`
  : !isRoot || !unshare
    ? 'needs root and unshare -m (a private mount namespace)'
    : !built
      ? 'needs the built services (pnpm turbo run build)'
      : !helmBuilt
        ? 'needs helm (bash scripts/setup.sh)'
        : false;

// / and the repository read-only, a fresh tmpfs on /tmp: what the pod's container sees. A checkout that
// lives under /tmp (a CI clone) would vanish under that tmpfs, so it is set aside on a bind mount first
// and put back, read-only, at its own path.
const READ_ONLY = `
repo="$1"; shift
keep=""
case "$repo" in
  /tmp/*) keep="$(mktemp -d /dev/shm/switchboard-repo.XXXXXX)" && mount --bind "$repo" "$keep" ;;
esac
mount -o remount,bind,ro / 2>/dev/null || { mount --bind / / && mount -o remount,bind,ro /; }
for m in $(findmnt -rn -o TARGET | grep -E '^/(work|root|home|srv|opt|usr|var)(/|$)' | sort -u); do
  mount -o remount,bind,ro "$m" 2>/dev/null || true
done
mount -t tmpfs -o size=256m tmpfs /tmp
if [ -n "$keep" ]; then
  mkdir -p "$repo" && mount --bind "$keep" "$repo" && mount -o remount,bind,ro "$repo" || exit 96
  umount "$keep" && rmdir "$keep"
  cd "$PWD" || exit 96
fi
touch /probe-read-only 2>/dev/null && { echo 'root filesystem still writable' >&2; exit 97; }
exec "$@"`;

function freePort() {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function envFor(name, spec) {
  const env = {
    PATH: process.env.PATH,
    NODE_ENV: 'production',
    NATS_URL: process.env.TEST_NATS_URL,
    NATS_USER: name,
    NATS_PASSWORD: process.env[`NATS_PASSWORD_${name.toUpperCase().replaceAll('-', '_')}`] ?? '',
    LOG_FORMAT: 'json',
    LOG_LEVEL: 'log',
    OTEL_TRACES_EXPORTER: 'none',
    // As values-production.yaml: every process serves /metrics (on loopback here).
    OTEL_METRICS_EXPORTER: 'prometheus',
    OTEL_EXPORTER_PROMETHEUS_HOST: '127.0.0.1',
    OTEL_EXPORTER_PROMETHEUS_PORT: String(await freePort()),
    OTEL_LOGS_EXPORTER: 'none',
    SWITCHBOARD_SERVER_URL: 'http://localhost:3003',
    SWITCHBOARD_CONNECT_URL: 'http://localhost:3009',
  };
  if (!spec.entry) env.PORT = String(await freePort());
  if (spec.connectPort) env.CONNECT_PORT = String(await freePort());
  if (spec.env.includes('database')) env.DATABASE_URL = process.env.TEST_DATABASE_URL;
  if (spec.env.includes('masterKeys')) env.SWITCHBOARD_MASTER_KEYS = process.env.TEST_MASTER_KEYS;
  if (spec.env.includes('internalToken'))
    env.SWITCHBOARD_INTERNAL_TOKEN = 'ro-root-test-internal-token-0123456789abcdef';
  if (spec.env.includes('redis')) env.REDIS_URL = process.env.TEST_REDIS_URL;
  if (spec.env.includes('temporal')) {
    env.TEMPORAL_ADDRESS = process.env.TEST_TEMPORAL_ADDRESS;
    // A queue of its own: this worker must not take tasks of other tests' workflows.
    env.TEMPORAL_TASK_QUEUE = `ro-root-test-${process.pid}`;
  }
  return env;
}

/** The production ServiceMonitor's metric relabelings, as the chart renders them. */
function metricRelabelings() {
  const work = mkdtempSync(join(tmpdir(), 'switchboard-helm-metrics-'));
  const r = run(helm, ['template', 'sb', chart, ...KUBE, '-f', join(chart, 'values-production.yaml')]);
  assert.equal(r.status, 0, r.stderr);
  writeFileSync(join(work, 'production.yaml'), r.stdout);
  const v = run(validatorBin(), ['-json', join(work, 'objects.json'), join(work, 'production.yaml')]);
  assert.equal(v.status, 0, v.stdout);
  const objects = JSON.parse(readFileSync(join(work, 'objects.json'), 'utf8'));
  const [monitor] = objects.filter((o) => o.kind === 'ServiceMonitor');
  return monitor.spec.endpoints[0].metricRelabelings ?? [];
}

/** A metric name after the relabelings that rewrite __name__ (Prometheus anchors its regexes). */
function relabel(name, rules) {
  for (const rule of rules) {
    if (rule.targetLabel !== '__name__' || (rule.sourceLabels ?? []).join() !== '__name__') continue;
    const match = new RegExp(`^(?:${rule.regex})$`).exec(name);
    if (match) name = rule.replacement.replace(/\$\{(\d+)\}/g, (_, i) => match[Number(i)] ?? '');
  }
  return name;
}

async function start(name, spec) {
  const env = await envFor(name, spec);
  const args = [...(nodeFlags[name] ?? []), spec.entry ?? 'dist/main.js'];
  const child = spawn(
    'unshare',
    ['-m', '--propagation', 'private', 'sh', '-c', READ_ONLY, 'sh', root, 'node', ...args],
    {
      cwd: join(root, 'apps', spec.app),
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  let status;
  const exited = new Promise((resolve) =>
    child.on('exit', (code, signal) => {
      status = { code, signal };
      resolve(status);
    }),
  );
  return { name, spec, env, child, exited, output: () => output, status: () => status };
}

async function waitUntil(what, check, ms) {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

test(
  "every service starts with only /tmp writable, serves the dashboard's series and drains within its grace",
  { skip, timeout: 240_000 },
  async (t) => {
    assert.ok(grace > preStop, `terminationGracePeriodSeconds ${grace} <= preStopSleepSeconds ${preStop}`);
    // All at once, as a release starts them: the gateway is ready only when every service answers it.
    const running = [];
    try {
      const t0 = Date.now();
      for (const [name, spec] of Object.entries(SERVICES)) running.push(await start(name, spec));
      // The gateway last: its /ready asks every other service, so a service that never gets ready is named
      // by its own wait rather than hidden behind the gateway's.
      const gatewayLast = [
        ...running.filter((s) => s.name !== 'gateway'),
        ...running.filter((s) => s.name === 'gateway'),
      ];
      for (const s of gatewayLast) {
        await waitUntil(
          `${s.name} ready`,
          async () => {
            if (s.status())
              throw new Error(
                `${s.name} exited (${JSON.stringify(s.status())}):\n${s.output().slice(-3000)}`,
              );
            if (s.spec.entry) return /worker polling task queue/.test(s.output());
            const r = await fetch(`http://127.0.0.1:${s.env.PORT}/ready`).catch(() => undefined);
            return r?.status === 200;
          },
          120_000,
        ).catch((error) => {
          throw new Error(`${error.message}\n${s.output().slice(-3000)}`);
        });
        t.diagnostic(`${s.name} ready after ${Date.now() - t0} ms`);
      }
      t.diagnostic(`all ready after ${Date.now() - t0} ms`);
      // What Prometheus would store from each pod, under the names the dashboard and alerts use.
      const rules = metricRelabelings();
      const dashboard = readFileSync(join(root, 'infra/grafana/dashboards/switchboard.json'), 'utf8');
      const base = (m) => m.replace(/_(bucket|count|sum)$/, '');
      const queried = new Set(
        [...dashboard.matchAll(/\b([a-z][a-z0-9_]+)(?:\{|\[)/g)].map((m) => base(m[1])),
      );
      const stored = new Set();
      for (const s of running) {
        const text = await (
          await fetch(`http://127.0.0.1:${s.env.OTEL_EXPORTER_PROMETHEUS_PORT}/metrics`)
        ).text();
        for (const [, name] of text.matchAll(/^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]/gm))
          stored.add(base(relabel(name, rules)));
      }
      // /ready was asked of every service, and the gateway asked the others over NATS.
      for (const series of [
        'http_server_request_duration_seconds',
        'messaging_client_operation_duration_seconds',
      ]) {
        assert.ok(stored.has(series), `no ${series} among ${[...stored].join(', ')}`);
        assert.ok(queried.has(series), `the dashboard does not query ${series}`);
      }
      for (const series of stored) {
        for (const alias of [`${series}_seconds`, series.replace(/_seconds$/, '')]) {
          assert.ok(
            alias === series || !queried.has(alias) || queried.has(series),
            `the pods give ${series}, the dashboard queries ${alias}`,
          );
        }
      }
      // Then each one is stopped as a rolling update or a scale-in stops it.
      for (const s of running) {
        const begin = Date.now();
        s.child.kill('SIGTERM');
        const { code } = await s.exited;
        const took = Date.now() - begin;
        t.diagnostic(`${s.name} stopped ${took} ms after SIGTERM`);
        assert.equal(code, 0, `${s.name} exited ${code} after SIGTERM:\n${s.output().slice(-3000)}`);
        assert.ok(
          took < (grace - preStop) * 1000,
          `${s.name} took ${took} ms to stop; its pod has ${grace - preStop} s after the preStop pause`,
        );
        assert.doesNotMatch(
          s.output(),
          /EROFS|read-only file system/i,
          `${s.name} tried to write outside /tmp`,
        );
      }
    } finally {
      for (const s of running) if (!s.status()) s.child.kill('SIGKILL');
    }
  },
);
