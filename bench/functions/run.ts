/**
 * `pnpm --filter bench run functions`: one run, on this machine, of
 *   1. a proxied GET through `/proxy` (the gateway's embedded engine, credentials injected), and
 *   2. an action that makes the same proxied GET through `nango.get` and returns the provider's 1 KB of
 *      JSON, triggered with `POST /action/trigger` (gateway → orchestrator → functions-runtime sandbox →
 *      proxy service → provider, and back),
 * measuring latency one request at a time (in chunks that alternate between the two, so the host's
 * other load falls on both alike), then actions per second at a fixed concurrency beside `/proxy` calls
 * per second at the same concurrency, and last the sandbox's own start-up, cold (an isolate made for the
 * run) against warm (a spare isolate made ahead of need), from the runtime's measurement script.
 *
 * Needs the built services (`pnpm build`) and the test infrastructure variables (TEST_DATABASE_URL,
 * TEST_NATS_URL, TEST_TEMPORAL_ADDRESS, TEST_REDIS_URL); see bench/README.md.
 */
import { execFileSync, execSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { cpuMicros, hostCpuMicros } from '../tools/proc';
import { benchArgs } from '../tools/args';
import { byTrace, median, startTraceSink, type SinkSpan } from '../tools/trace-sink';
import { api, connectBenchUpstream, writeBenchProvidersFile } from '../tools/upstream';

const { args, num } = benchArgs();
const SETTINGS = {
  warmupRequests: num('warmup-requests', 300),
  latencyRequests: num('latency-requests', 2000),
  latencyChunk: num('latency-chunk', 100),
  throughputMs: num('throughput-ms', 10_000),
  concurrency: num('concurrency', 16),
};
const TARGETS = { p50AddedMs: 5, actionsPerSecond: 200 };

// 1 KB of JSON with no padding, so the action's output (the parsed and re-serialised body) is 1 KB too.
const JSON_1KB = Buffer.from(
  JSON.stringify({
    data: Array.from({ length: 22 }, (_, i) => ({ id: i, name: `item-${i}`, email: `u${i}@example.com` })),
  }),
);

/** What `nango deploy` would send for one action: the CommonJS shape the nango CLI's compiler gives. */
const ACTION_BUNDLE = `"use strict";
module.exports = { default: { type: "action", description: "One proxied GET, its JSON returned",
  exec: async (nango) => { const response = await nango.get({ endpoint: "/json" }); return response.data; } } };`;

function startUpstream(): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    if (req.headers.authorization !== 'Bearer bench-token') {
      res.writeHead(401).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': JSON_1KB.length });
    res.end(JSON_1KB);
  });
  server.keepAliveTimeout = 60_000;
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }),
    ),
  );
}

interface Call {
  name: string;
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string;
}

async function once(pool: Pool, call: Call): Promise<number> {
  const started = process.hrtime.bigint();
  const res = await pool.request({
    method: call.method,
    path: call.path,
    headers: call.headers,
    ...(call.body ? { body: call.body } : {}),
  });
  const body = await res.body.arrayBuffer();
  if (res.statusCode !== 200 || body.byteLength < 1000) {
    throw new Error(`${call.name}: ${res.statusCode} ${Buffer.from(body).toString('utf8').slice(0, 300)}`);
  }
  return Number(process.hrtime.bigint() - started) / 1e6;
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;

async function interleavedLatency(pool: Pool, calls: Call[]): Promise<Map<string, number[]>> {
  const samples = new Map<string, number[]>(calls.map((c) => [c.name, []]));
  const rounds = Math.ceil(SETTINGS.latencyRequests / SETTINGS.latencyChunk);
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? calls : [...calls].reverse();
    for (const call of order) {
      for (let i = 0; i < SETTINGS.latencyChunk; i++) samples.get(call.name)!.push(await once(pool, call));
    }
  }
  for (const list of samples.values()) list.sort((a, b) => a - b);
  return samples;
}

interface Measured {
  name: string;
  pid: number;
}

/**
 * CPU each process burns per millisecond while nothing is asked of it (timers, health checks, the
 * Temporal worker's polls): subtracted from the throughput windows, so a slow rate on a busy host does not
 * spread the idle cost over few calls.
 */
async function idleCpuPerMs(processes: Measured[], windowMs = 3000): Promise<number[]> {
  const before = processes.map((p) => cpuMicros(p.pid));
  const started = Date.now();
  await new Promise((r) => setTimeout(r, windowMs));
  const elapsed = Date.now() - started;
  return processes.map((p, i) => (cpuMicros(p.pid) - before[i]!) / 1000 / elapsed);
}

async function throughput(
  pool: Pool,
  call: Call,
  processes: Measured[],
  idle: number[],
): Promise<{ perSecond: number; cpuMs: number; byProcess: string; otherMs: number; benchMs: number }> {
  const pids = processes.map((p) => p.pid);
  const deadline = Date.now() + SETTINGS.throughputMs;
  const cpuBefore = pids.map(cpuMicros);
  const hostBefore = hostCpuMicros();
  const benchBefore = process.cpuUsage();
  const started = Date.now();
  let done = 0;
  await Promise.all(
    Array.from({ length: SETTINGS.concurrency }, async () => {
      while (Date.now() < deadline) {
        await once(pool, call);
        done++;
      }
    }),
  );
  const seconds = (Date.now() - started) / 1000;
  const elapsedMs = seconds * 1000;
  const each = pids.map(
    (pid, i) =>
      Math.max(0, (cpuMicros(pid) - cpuBefore[i]!) / 1000 - idle[i]! * elapsedMs) / Math.max(1, done),
  );
  const bench = process.cpuUsage(benchBefore);
  const benchMs = (bench.user + bench.system) / 1000 / Math.max(1, done);
  // Whatever else ran on the host meanwhile (other jobs, Postgres, NATS, the upstream), per call.
  const hostMs = (hostCpuMicros() - hostBefore) / 1000 / Math.max(1, done);
  const byProcess = processes
    .map((p, i) => `${p.name} ${each[i]!.toFixed(2)}`)
    .filter((_, i) => each[i]! >= 0.01)
    .join(', ');
  const cpuMs = each.reduce((a, b) => a + b, 0);
  return { perSecond: done / seconds, cpuMs, byProcess, benchMs, otherMs: hostMs - cpuMs - benchMs };
}

/**
 * The c=1 actions' time split into serial segments, from their traces: each span's duration less the
 * span it waits on (durations are exact, start times are whole milliseconds; see trace-sink.ts).
 */
function breakdown(spans: readonly SinkSpan[], window: { from: number; to: number }): string {
  const segments = new Map<string, number[]>();
  let traces = 0;
  for (const list of byTrace(spans).values()) {
    const root = list.find((s) => !s.parentSpanId && s.service === 'gateway');
    if (!root || root.startMs < window.from || root.startMs > window.to) continue;
    const find = (service: string, name: string) =>
      list.find((s) => s.service === service && s.name === name)?.durationMs ?? NaN;
    const run = find('functions-runtime', 'function.run action');
    if (Number.isNaN(run)) continue;
    traces++;
    const gatewaySend = find('gateway', 'orchestrator.v1.action.trigger send');
    const orchestrator = find('sync-orchestrator', 'orchestrator.v1.action.trigger process');
    const runSend = find('sync-orchestrator', 'functions.v1.run send');
    const runtime = find('functions-runtime', 'functions.v1.run process');
    const hostCall = find('functions-runtime', 'nango.proxy GET');
    // The proxy service's server span is its longest (its upstream call is inside it).
    const proxy = Math.max(...list.filter((s) => s.service === 'proxy').map((s) => s.durationMs));
    const add = (name: string, ms: number) => segments.set(name, [...(segments.get(name) ?? []), ms]);
    add('total (gateway server span)', root.durationMs);
    add('gateway, outside its NATS request', root.durationMs - gatewaySend);
    add('NATS gateway ⇄ orchestrator (request − handler)', gatewaySend - orchestrator);
    add('orchestrator, outside its run request', orchestrator - runSend);
    add('NATS orchestrator ⇄ functions-runtime (request − handler)', runSend - runtime);
    add('functions-runtime, outside the sandbox run', runtime - run);
    add('sandbox run, outside the nango.proxy host call', run - hostCall);
    add('host call, outside the proxy service', hostCall - proxy);
    add('proxy service (upstream included)', proxy);
  }
  const lines = [...segments].map(([name, values]) => `| ${name} | ${median(values).toFixed(2)} ms |`);
  return [
    `breakdown of ${traces} actions at c=1 (medians of each segment; they need not add up to the total's):`,
    '| segment | p50 |',
    '|---|---|',
    ...lines,
  ].join('\n');
}

async function main(): Promise<void> {
  const { startStack, freePort, repoRoot } = await import('@switchboard/testing');
  const upstream = await startUpstream();
  const providersFile = writeBenchProvidersFile('functions');
  const loadAtStart = os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
  // `--breakdown`: the services export their spans to a loopback sink, and the c=1 actions' time is split
  // into its serial segments (each hop's own time) at the end. The exporter costs the services some CPU.
  const sink = args.has('breakdown') ? await startTraceSink() : undefined;
  console.log('starting the Switchboard stack...');
  const loopback = { SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1' };
  const stack = await startStack({
    env: {
      SWITCHBOARD_PROVIDERS_FILE: providersFile,
      SWITCHBOARD_RATE_LIMIT_PER_MIN: '1000000',
      LOG_LEVEL: 'warn',
      ...(sink ? sink.env : {}),
    },
    serviceEnv: {
      gateway: loopback,
      proxy: loopback,
      'functions-runtime': {
        ...loopback,
        // `--spares=0` makes every isolate when its run starts (the cold path), to show what spares save.
        ...(args.has('spares') ? { FUNCTIONS_SPARE_ISOLATES: String(num('spares', 2)) } : {}),
        // `--pooled=0` gives every run a fresh isolate (no pool), to compare with the pool.
        ...(args.has('pooled') ? { FUNCTIONS_POOLED_ISOLATES: String(num('pooled', 16)) } : {}),
        // `--ready=0` makes each pooled run's context on its path, to compare with ready contexts.
        ...(args.has('ready') ? { FUNCTIONS_READY_CONTEXTS: num('ready', 1) ? 'true' : 'false' } : {}),
      },
      'auth-connect': { CONNECT_PORT: String(await freePort()), CONNECT_HOST: '127.0.0.1' },
    },
    readyTimeoutMs: 180_000,
  });
  try {
    const { gatewayUrl, secretKey } = stack;
    await connectBenchUpstream(gatewayUrl, secretKey, upstream.url);
    await api(gatewayUrl, secretKey, 'POST', '/sync/deploy', {
      flowConfigs: [
        {
          type: 'action',
          syncName: 'fetch-json',
          providerConfigKey: 'bench',
          models: ['ActionOutput_bench_fetchjson'],
          runs: null,
          track_deletes: false,
          version: '1.0.0',
          metadata: { description: 'One proxied GET', scopes: [] },
          endpoints: [],
          fileBody: { js: ACTION_BUNDLE, ts: '// compiled by hand for the bench' },
        },
      ],
      deployMode: 'single',
      reconcile: false,
      debug: false,
      nangoYamlBody: '',
    });

    const auth = {
      authorization: `Bearer ${secretKey}`,
      'provider-config-key': 'bench',
      'connection-id': 'bench-1',
    };
    const proxyCall: Call = { name: 'GET /proxy/json', method: 'GET', path: '/proxy/json', headers: auth };
    const actionCall: Call = {
      name: 'POST /action/trigger',
      method: 'POST',
      path: '/action/trigger',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ action_name: 'fetch-json', input: {} }),
    };
    const pool = new Pool(gatewayUrl, { connections: SETTINGS.concurrency, pipelining: 1 });
    console.log(`warming up (${SETTINGS.warmupRequests} of each)...`);
    for (let i = 0; i < SETTINGS.warmupRequests; i++) {
      await once(pool, proxyCall);
      await once(pool, actionCall);
    }

    console.log(`latency at c=1 (${SETTINGS.latencyRequests} of each, interleaved)...`);
    const latencyWindow = { from: Date.now(), to: 0 };
    const latency = await interleavedLatency(pool, [proxyCall, actionCall]);
    latencyWindow.to = Date.now();
    const processes = (
      [
        'gateway',
        'sync-orchestrator',
        'functions-runtime',
        'proxy',
        'connections-vault',
        'auth-connect',
      ] as const
    )
      .flatMap((name) => stack.replicas[name])
      .map((r) => ({ name: r.name, pid: r.process.pid! }));
    console.log(`throughput at c=${SETTINGS.concurrency} (${SETTINGS.throughputMs} ms each)...`);
    const idle = await idleCpuPerMs(processes);
    const proxyRate = await throughput(pool, proxyCall, processes, idle);
    const actionRate = await throughput(pool, actionCall, processes, idle);
    await pool.close();

    const start = execFileSync(
      process.execPath,
      ['--no-node-snapshot', join(repoRoot(), 'apps/functions-runtime/scripts/measure-start.mjs'), '30'],
      { encoding: 'utf8' },
    );

    let sha = '';
    try {
      sha = execSync('git rev-parse --short HEAD', { encoding: 'utf8' }).trim();
    } catch {
      // not a checkout
    }
    const proxy = latency.get(proxyCall.name)!;
    const action = latency.get(actionCall.name)!;
    const added = percentile(action, 0.5) - percentile(proxy, 0.5);
    const met = (ok: boolean) => (ok ? 'met' : 'MISSED');
    console.log(
      `\ndate ${new Date().toISOString()} | ${os.cpus()[0]?.model ?? '?'} × ${os.cpus().length} | node ${process.version} | git ${sha}`,
    );
    console.log(
      `settings: ${SETTINGS.latencyRequests} requests each at c=1 in chunks of ${SETTINGS.latencyChunk} interleaved, ${SETTINGS.throughputMs} ms at c=${SETTINGS.concurrency} each, 1 KB JSON, OpenTelemetry on (${sink ? 'spans exported to a loopback sink: --breakdown' : 'no exporter'})\n`,
    );
    console.log(
      '| call | c=1 p50 | c=1 p90 | c=1 p99 | per second at c=' +
        SETTINGS.concurrency +
        ' | CPU per call (services) |',
    );
    console.log('|---|---|---|---|---|---|');
    for (const [name, sorted, rate] of [
      [proxyCall.name, proxy, proxyRate],
      [actionCall.name, action, actionRate],
    ] as const) {
      console.log(
        `| ${name} | ${percentile(sorted, 0.5).toFixed(2)} ms | ${percentile(sorted, 0.9).toFixed(2)} ms | ${percentile(sorted, 0.99).toFixed(2)} ms | ${rate.perSecond.toFixed(0)} | ${rate.cpuMs.toFixed(2)} ms |`,
      );
    }
    console.log(
      `\nCPU ms per call by process (idle CPU subtracted), /proxy: ${proxyRate.byProcess}; action: ${actionRate.byProcess}`,
    );
    console.log(
      `host: load average ${loadAtStart} at the start; CPU per call of the bench process ${proxyRate.benchMs.toFixed(2)} / ${actionRate.benchMs.toFixed(2)} ms, of everything else on the host (Postgres, NATS, the services' idle work, other jobs) ${proxyRate.otherMs.toFixed(2)} / ${actionRate.otherMs.toFixed(2)} ms (/proxy / action)`,
    );
    console.log(
      `actions the services' CPU allows on ${os.cpus().length} otherwise idle cores: ${((os.cpus().length * 1000) / actionRate.cpuMs).toFixed(0)}/s (${os.cpus().length} × 1000 ms / ${actionRate.cpuMs.toFixed(2)} ms)`,
    );
    console.log(
      `action over the same proxied call: p50 +${added.toFixed(2)} ms (target ≤ +${TARGETS.p50AddedMs} ms: ${met(added <= TARGETS.p50AddedMs)})`,
    );
    console.log(
      `actions per second: ${actionRate.perSecond.toFixed(0)} (target ≥ ${TARGETS.actionsPerSecond}: ${met(actionRate.perSecond >= TARGETS.actionsPerSecond)}); actions / proxied calls = ${(actionRate.perSecond / proxyRate.perSecond).toFixed(2)}`,
    );
    console.log(`\nsandbox start (functions-runtime scripts/measure-start.mjs 30):\n${start.trim()}`);
    if (sink) console.log(`\n${breakdown(sink.spans, latencyWindow)}`);
  } finally {
    await stack.stop();
    upstream.server.close();
    sink?.close();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
