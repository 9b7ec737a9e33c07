/**
 * `pnpm --filter bench run proxy`: one run, on this machine, of
 *   1. a loopback upstream called directly,
 *   2. a bare undici reverse proxy (hop-by-hop strip + credential header, nothing else),
 *   3. the gateway + Switchboard proxy with a real integration and connection (key check, rate limit,
 *      scope, credential lookup, egress policy, header filtering), in the gateway's default embedded
 *      proxy mode or, with `--proxy-mode=remote`, through the proxy service (plus the signed caller),
 * measuring latency at one request at a time, throughput at a fixed concurrency, and the memory growth
 * of each proxy process during a 100 MB download. Prints the figures, the ratios and the targets.
 *
 * Needs the built services (`pnpm build`) and the same infrastructure variables as the tests
 * (TEST_DATABASE_URL, TEST_NATS_URL, TEST_TEMPORAL_ADDRESS, TEST_REDIS_URL); see bench/README.md.
 */
import { execSync, fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { Pool, type Dispatcher } from 'undici';
import { cpuMicros } from '../tools/proc';
import { benchArgs } from '../tools/args';
import { connectBenchUpstream, writeBenchProvidersFile } from '../tools/upstream';

const { args, num } = benchArgs();
const SETTINGS = {
  reps: num('reps', 3),
  // The gateway's JIT warm-up is longer than the bare proxy's (far more code): 5 s, for all three targets.
  warmupMs: num('warmup-ms', 5000),
  latencyRequests: num('latency-requests', 10_000),
  /** Latency is measured in chunks of this many requests, alternating between the targets. */
  latencyChunk: num('latency-chunk', 250),
  throughputMs: num('throughput-ms', 10_000),
  concurrency: num('concurrency', 50),
  /** Throughput is measured in slices of this length, alternating between the targets. */
  sliceMs: num('slice-ms', 1000),
  bigBytes: num('big-mb', 100) * 1024 * 1024,
  /** `--otel=off` runs gateway and proxy with OpenTelemetry disabled, to show what tracing costs. */
  otel: args.get('otel') !== 'off',
  /** `--proxy-mode=remote` measures the gateway streaming to the proxy service instead of the embedded engine. */
  proxyMode: args.get('proxy-mode') === 'remote' ? 'remote' : 'embedded',
};

const JSON_1KB = Buffer.from(
  JSON.stringify({
    data: Array.from({ length: 12 }, (_, i) => ({ id: i, name: `item-${i}`, email: `user${i}@example.com` })),
  }).padEnd(1024, ' '),
);
const PER_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
]);

// ---- child roles ---------------------------------------------------------------------------

function listen(server: ReturnType<typeof createServer>): void {
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port }));
}

/** The provider: 1 KB JSON, or a 100 MB stream. */
function runUpstream(): void {
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  listen(
    createServer((req, res) => {
      if (req.url?.startsWith('/big')) {
        res.writeHead(200, {
          'content-type': 'application/octet-stream',
          'content-length': String(SETTINGS.bigBytes),
        });
        let sent = 0;
        const pump = () => {
          while (sent < SETTINGS.bigBytes) {
            sent += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        return pump();
      }
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-length': String(JSON_1KB.length),
        etag: '"b1"',
      });
      res.end(JSON_1KB);
    }),
  );
}

/** The floor: what any reverse proxy must do (strip per-hop headers, add a credential, stream both ways). */
function runBareProxy(upstream: string): void {
  const pool = new Pool(upstream, { connections: 256, keepAliveTimeout: 60_000 });
  const strip = (headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>) => {
    const out: OutgoingHttpHeaders = {};
    for (const [k, v] of Object.entries(headers)) if (v !== undefined && !PER_HOP.has(k)) out[k] = v;
    return out;
  };
  listen(createServer((req, res) => void forward(req, res)));
  async function forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const hasBody =
        req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;
      const response = await pool.request({
        path: req.url ?? '/',
        method: req.method as Dispatcher.HttpMethod,
        headers: { ...(strip(req.headers) as Record<string, string>), authorization: 'Bearer bench-token' },
        body: hasBody ? req : null,
      });
      res.writeHead(response.statusCode, strip(response.headers));
      // Plain pipe, as the Switchboard proxy does (stream.pipeline costs an AbortController per call).
      response.body.on('error', () => res.destroy());
      res.on('close', () => response.body.destroy());
      response.body.pipe(res);
    } catch {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    }
  }
}

// ---- measurement ---------------------------------------------------------------------------

interface Target {
  name: string;
  origin: string;
  path: string;
  headers: Record<string, string>;
  /** Processes whose memory a 100 MB download must not grow much, and whose CPU is counted. */
  pids: number[];
  labels?: string[];
}

interface LatencyResult {
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
  errors: number;
}

const percentile = (sorted: Float64Array, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

async function once(pool: Pool, target: Target, path = target.path): Promise<number> {
  const response = await pool.request({ path, method: 'GET', headers: target.headers });
  for await (const _ of response.body) {
    // read the whole body, as a client would
  }
  return response.statusCode;
}

/**
 * One request at a time to each target, `requests` each, in chunks of `chunk` that alternate between the
 * targets (as the throughput slices do), so a stall of the host lands on every target's percentiles alike
 * rather than on whichever was being measured. Latency in microseconds.
 */
async function interleavedLatency(
  targets: Target[],
  requests: number,
  chunk: number,
): Promise<LatencyResult[]> {
  const pools = targets.map(
    (t) => new Pool(t.origin, { connections: 1, pipelining: 1, keepAliveTimeout: 60_000 }),
  );
  const samples = targets.map(() => new Float64Array(requests));
  const errors = targets.map(() => 0);
  for (let done = 0, round = 0; done < requests; done += chunk, round++) {
    const order = targets.map((_, i) => (round % 2 === 0 ? i : targets.length - 1 - i));
    for (const t of order) {
      for (let i = done; i < Math.min(requests, done + chunk); i++) {
        const start = process.hrtime.bigint();
        const status = await once(pools[t]!, targets[t]!);
        samples[t]![i] = Number(process.hrtime.bigint() - start) / 1000;
        if (status !== 200) errors[t]!++;
      }
    }
  }
  await Promise.all(pools.map((p) => p.close()));
  return samples.map((s, t) => {
    s.sort();
    return {
      p50: percentile(s, 50),
      p90: percentile(s, 90),
      p99: percentile(s, 99),
      p999: percentile(s, 99.9),
      max: s[s.length - 1] ?? 0,
      errors: errors[t]!,
    };
  });
}

type ThroughputResult = { rps: number; cpuPerRequest: number; cpuSplit: string } & LatencyResult;

/** What one target did over its slices of a throughput phase. */
interface Tally {
  requests: number;
  errors: number;
  elapsedMs: number;
  cpu: number[];
  samples: number[];
}

/** `concurrency` requests in flight on `pool` for `durationMs`, added to `tally` (CPU of the target's processes too). */
async function slice(
  pool: Pool,
  target: Target,
  concurrency: number,
  durationMs: number,
  tally: Tally,
): Promise<void> {
  const cpuBefore = target.pids.map(cpuMicros);
  const started = Date.now();
  const stopAt = started + durationMs;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < stopAt) {
        const t0 = process.hrtime.bigint();
        const status = await once(pool, target).catch(() => 0);
        tally.samples.push(Number(process.hrtime.bigint() - t0) / 1000);
        tally.requests++;
        if (status !== 200) tally.errors++;
      }
    }),
  );
  tally.elapsedMs += Date.now() - started;
  target.pids.forEach(
    (pid, i) => (tally.cpu[i] = (tally.cpu[i] ?? 0) + cpuMicros(pid) - (cpuBefore[i] ?? 0)),
  );
}

/**
 * Throughput of every target at `concurrency`, `durationMs` each, measured in interleaved slices of
 * `sliceMs` (A B C, C B A, A B C, ...) so that the host's other load, which on these shared VMs swings by
 * tens of percent over seconds, falls on all targets alike instead of on whichever ran in a bad minute.
 * One untimed round first, so every pool holds its connections before the clock starts.
 */
async function interleavedThroughput(
  targets: Target[],
  concurrency: number,
  durationMs: number,
  sliceMs: number,
): Promise<ThroughputResult[]> {
  const pools = targets.map(
    (t) => new Pool(t.origin, { connections: concurrency, pipelining: 1, keepAliveTimeout: 60_000 }),
  );
  const tallies: Tally[] = targets.map(() => ({
    requests: 0,
    errors: 0,
    elapsedMs: 0,
    cpu: [],
    samples: [],
  }));
  const scratch = (): Tally => ({ requests: 0, errors: 0, elapsedMs: 0, cpu: [], samples: [] });
  for (let i = 0; i < targets.length; i++)
    await slice(pools[i]!, targets[i]!, concurrency, Math.min(sliceMs, 1000), scratch());
  const rounds = Math.max(1, Math.round(durationMs / sliceMs));
  for (let round = 0; round < rounds; round++) {
    const order = targets.map((_, i) => (round % 2 === 0 ? i : targets.length - 1 - i));
    for (const i of order) await slice(pools[i]!, targets[i]!, concurrency, sliceMs, tallies[i]!);
  }
  await Promise.all(pools.map((p) => p.close()));
  return targets.map((target, i) => {
    const tally = tallies[i]!;
    const sorted = Float64Array.from(tally.samples).sort();
    const perRequest = (cpu: number) => cpu / Math.max(1, tally.requests);
    return {
      rps: (tally.requests / tally.elapsedMs) * 1000,
      cpuPerRequest: perRequest(tally.cpu.reduce((n, v) => n + v, 0)),
      cpuSplit: target.pids
        .map((pid, j) => `${target.labels?.[j] ?? pid} ${perRequest(tally.cpu[j] ?? 0).toFixed(0)} µs`)
        .join(', '),
      p50: percentile(sorted, 50),
      p90: percentile(sorted, 90),
      p99: percentile(sorted, 99),
      p999: percentile(sorted, 99.9),
      max: sorted[sorted.length - 1] ?? 0,
      errors: tally.errors,
    };
  });
}

const rss = (pid: number) =>
  Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;

/** Downloads the big body through the target while sampling the RSS of its processes. */
async function download(target: Target): Promise<{ seconds: number; growthMb: Record<number, number> }> {
  const pool = new Pool(target.origin, { connections: 1 });
  const base = new Map(target.pids.map((pid) => [pid, rss(pid)]));
  const peak = new Map(base);
  const sampler = setInterval(() => {
    for (const pid of target.pids) peak.set(pid, Math.max(peak.get(pid) ?? 0, rss(pid)));
  }, 20);
  const started = Date.now();
  const status = await once(pool, target, target.path.replace(/json$/, 'big'));
  clearInterval(sampler);
  await pool.close();
  if (status !== 200) throw new Error(`download through ${target.name} answered ${status}`);
  const growthMb: Record<number, number> = {};
  for (const pid of target.pids) growthMb[pid] = ((peak.get(pid) ?? 0) - (base.get(pid) ?? 0)) / 1024 / 1024;
  return { seconds: (Date.now() - started) / 1000, growthMb };
}

// ---- orchestration -------------------------------------------------------------------------

function child(role: string, ...extra: string[]): Promise<{ process: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    // BENCH_PROFILE_BARE_MS: a CPU profile of the bare proxy, as BENCH_PROFILE_GATEWAY_MS gives of the gateway.
    const profile = role === 'bare' && process.env.BENCH_PROFILE_BARE_MS;
    const env = profile
      ? {
          ...process.env,
          NODE_OPTIONS: `--require ${join(__dirname, '../../tools/cpu-profile.cjs')}`,
          BENCH_PROFILE_DIR: '/tmp/bench-prof/bare',
          BENCH_PROFILE_MS: profile,
          BENCH_PROFILE_DELAY_MS: process.env.BENCH_PROFILE_DELAY_MS ?? '0',
        }
      : process.env;
    const proc = fork(__filename, [role, ...extra, `--big-mb=${SETTINGS.bigBytes / 1024 / 1024}`], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env,
    });
    proc.once('message', (m: { port: number }) => resolve({ process: proc, port: m.port }));
    proc.once('exit', (code) => reject(new Error(`${role} exited with ${code}`)));
  });
}

const median = (values: number[]) => {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
};
const us = (v: number) => `${v.toFixed(0)} µs`;

/**
 * NODE_OPTIONS for the gateway: BENCH_GATEWAY_NODE_OPTIONS as given, plus, with BENCH_PROFILE_GATEWAY_MS=<ms>,
 * a V8 CPU profile of the gateway for that long after BENCH_PROFILE_DELAY_MS, into /tmp/bench-prof/gateway/
 * (open it in Chrome DevTools).
 */
function gatewayNodeOptions(): Record<string, string> {
  const options = [process.env.BENCH_GATEWAY_NODE_OPTIONS ?? ''];
  const env: Record<string, string> = {};
  if (process.env.BENCH_PROFILE_GATEWAY_MS) {
    options.push(`--require ${join(__dirname, '../../tools/cpu-profile.cjs')}`);
    Object.assign(env, {
      BENCH_PROFILE_DIR: '/tmp/bench-prof/gateway',
      BENCH_PROFILE_MS: process.env.BENCH_PROFILE_GATEWAY_MS,
      BENCH_PROFILE_DELAY_MS: process.env.BENCH_PROFILE_DELAY_MS ?? '0',
    });
  }
  const joined = options.join(' ').trim();
  return joined ? { ...env, NODE_OPTIONS: joined } : env;
}

async function main(): Promise<void> {
  const { startStack, freePort } = await import('@switchboard/testing');
  const upstream = await child('upstream');
  const upstreamUrl = `http://127.0.0.1:${upstream.port}`;
  const bare = await child('bare', upstreamUrl);

  const providersFile = writeBenchProvidersFile('proxy');
  console.log('starting the Switchboard stack...');
  // The engine runs in the gateway (embedded) or in the proxy service (remote); both get its settings.
  const engineEnv = {
    SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1',
    ...(SETTINGS.otel ? {} : { OTEL_SDK_DISABLED: 'true' }),
  };
  const stack = await startStack({
    env: {
      SWITCHBOARD_PROVIDERS_FILE: providersFile,
      SWITCHBOARD_RATE_LIMIT_PER_MIN: '1000000',
      LOG_LEVEL: 'warn',
    },
    serviceEnv: {
      proxy: engineEnv,
      gateway: {
        ...engineEnv,
        SWITCHBOARD_PROXY_MODE: SETTINGS.proxyMode,
        ...gatewayNodeOptions(),
      },
      'auth-connect': { CONNECT_PORT: String(await freePort()), CONNECT_HOST: '127.0.0.1' },
    },
    readyTimeoutMs: 180_000,
  });
  const results: Record<string, { latency: LatencyResult[]; throughput: ThroughputResult[] }> = {};
  try {
    await connectBenchUpstream(stack.gatewayUrl, stack.secretKey, upstreamUrl);

    if (process.env.BENCH_HOLD) {
      // For poking at the running stack by hand (strace, perf, curl): continues on SIGUSR2.
      console.log(
        `holding: gateway pid ${stack.services.gateway.process.pid} at ${stack.gatewayUrl}, key ${stack.secretKey}, upstream ${upstreamUrl}`,
      );
      await new Promise((resolve) => process.once('SIGUSR2', resolve));
    }
    const switchboard = `gateway + Switchboard proxy (${SETTINGS.proxyMode})`;
    const targets: Target[] = [
      { name: 'direct', origin: upstreamUrl, path: '/json', headers: {}, pids: [upstream.process.pid!] },
      {
        name: 'bare undici proxy',
        origin: `http://127.0.0.1:${bare.port}`,
        path: '/json',
        headers: {},
        pids: [bare.process.pid!],
      },
      {
        name: switchboard,
        origin: stack.gatewayUrl,
        path: '/proxy/json',
        headers: {
          authorization: `Bearer ${stack.secretKey}`,
          'provider-config-key': 'bench',
          'connection-id': 'bench-1',
        },
        ...(SETTINGS.proxyMode === 'remote'
          ? {
              pids: [stack.services.gateway.process.pid!, stack.services.proxy.process.pid!],
              labels: ['gateway', 'proxy'],
            }
          : { pids: [stack.services.gateway.process.pid!], labels: ['gateway'] }),
      },
    ];
    for (const t of targets) results[t.name] = { latency: [], throughput: [] };

    const ratios: number[] = [];
    for (let rep = 1; rep <= SETTINGS.reps; rep++) {
      for (const target of targets) {
        const warmEnd = Date.now() + SETTINGS.warmupMs;
        const warm = new Pool(target.origin, { connections: SETTINGS.concurrency });
        while (Date.now() < warmEnd) await Promise.all(Array.from({ length: 10 }, () => once(warm, target)));
        await warm.close();
      }
      const latencies = await interleavedLatency(targets, SETTINGS.latencyRequests, SETTINGS.latencyChunk);
      const throughputs = await interleavedThroughput(
        targets,
        SETTINGS.concurrency,
        SETTINGS.throughputMs,
        SETTINGS.sliceMs,
      );
      targets.forEach((target, i) => {
        const lat = latencies[i]!;
        const thr = throughputs[i]!;
        results[target.name]!.latency.push(lat);
        results[target.name]!.throughput.push(thr);
        console.log(
          `rep ${rep} ${target.name.padEnd(28)} c=1 p50 ${us(lat.p50)} p99 ${us(lat.p99)} | c=${SETTINGS.concurrency} ${thr.rps.toFixed(0)} req/s p99 ${us(thr.p99)} cpu/req ${us(thr.cpuPerRequest)} (${thr.cpuSplit})` +
            (lat.errors + thr.errors ? ` | ${lat.errors + thr.errors} errors` : ''),
        );
      });
      ratios.push(throughputs[2]!.rps / throughputs[1]!.rps);
      console.log(`rep ${rep} throughput Switchboard / bare = ${ratios[ratios.length - 1]!.toFixed(2)}`);
    }

    const summary = Object.fromEntries(
      targets.map((t) => {
        const r = results[t.name]!;
        return [
          t.name,
          {
            p50: median(r.latency.map((l) => l.p50)),
            p99: Math.max(...r.latency.map((l) => l.p99)),
            p999: Math.max(...r.latency.map((l) => l.p999)),
            rps: median(r.throughput.map((x) => x.rps)),
            loadP99: Math.max(...r.throughput.map((x) => x.p99)),
            cpu: median(r.throughput.map((x) => x.cpuPerRequest)),
            errors: [...r.latency, ...r.throughput].reduce((n, x) => n + x.errors, 0),
          },
        ];
      }),
    );
    const direct = summary['direct']!;
    const bareS = summary['bare undici proxy']!;
    const sb = summary[switchboard]!;

    const downloads: string[] = [];
    for (const target of targets.slice(1)) {
      const d = await download(target);
      const growth = Object.entries(d.growthMb).map(
        ([pid, mb]) =>
          `${pid === String(stack.services.gateway.process.pid) ? 'gateway' : pid === String(stack.services.proxy.process.pid) ? 'proxy' : 'bare'} +${mb.toFixed(1)} MB`,
      );
      downloads.push(
        `${target.name}: ${SETTINGS.bigBytes / 1024 / 1024} MB in ${d.seconds.toFixed(2)} s, RSS ${growth.join(', ')}`,
      );
      if (target.name.startsWith('gateway'))
        (sb as Record<string, unknown>).growth = Math.max(...Object.values(d.growthMb));
    }

    let sha = 'unknown';
    try {
      sha = execSync('git rev-parse --short HEAD', { encoding: 'utf8' }).trim();
    } catch {
      // not a git checkout
    }
    const lines = [
      '',
      `date ${new Date().toISOString()} | ${os.cpus()[0]?.model ?? 'cpu'} × ${os.cpus().length} | ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB | node ${process.version} | ${os.platform()} ${os.release()} | git ${sha}`,
      `settings: ${SETTINGS.reps} reps, warm-up ${SETTINGS.warmupMs} ms, ${SETTINGS.latencyRequests} requests at c=1 in chunks of ${SETTINGS.latencyChunk} interleaved, ${SETTINGS.throughputMs} ms at c=${SETTINGS.concurrency} in ${SETTINGS.sliceMs} ms slices interleaved between the targets, 1 KB JSON, OpenTelemetry ${SETTINGS.otel ? 'on (no exporter)' : 'off'}, proxy mode ${SETTINGS.proxyMode}`,
      '',
      '| target | c=1 p50 | c=1 p99 | c=1 p99.9 | req/s at c=' +
        SETTINGS.concurrency +
        ' | p99 at c=' +
        SETTINGS.concurrency +
        ' | CPU per request (its processes) | errors |',
      '|---|---|---|---|---|---|---|---|',
      ...targets.map((t) => {
        const s = summary[t.name]!;
        return `| ${t.name} | ${us(s.p50)} | ${us(s.p99)} | ${us(s.p999)} | ${s.rps.toFixed(0)} | ${us(s.loadP99)} | ${us(s.cpu)} | ${s.errors} |`;
      }),
      '',
      `added latency vs direct: p50 +${us(sb.p50 - direct.p50)} (target ≤ +500 µs: ${sb.p50 - direct.p50 <= 500 ? 'met' : 'MISSED'}), p99 +${us(sb.p99 - direct.p99)} (target ≤ +3000 µs: ${sb.p99 - direct.p99 <= 3000 ? 'met' : 'MISSED'})`,
      `added latency vs bare proxy: p50 +${us(sb.p50 - bareS.p50)}, p99 +${us(sb.p99 - bareS.p99)}; bare proxy vs direct: p50 +${us(bareS.p50 - direct.p50)}`,
      `throughput: Switchboard / bare = ${median(ratios).toFixed(2)}, median of the reps' ratios (${ratios.map((r) => r.toFixed(2)).join(', ')}) (target ≥ 0.70: ${median(ratios) >= 0.7 ? 'met' : 'MISSED'}); bare / direct = ${(bareS.rps / direct.rps).toFixed(2)}`,
      ...downloads,
      `memory growth through gateway + proxy: ${((sb as Record<string, unknown>).growth as number).toFixed(1)} MB max per process (target ≤ 50 MB: ${((sb as Record<string, unknown>).growth as number) <= 50 ? 'met' : 'MISSED'})`,
    ];
    console.log(lines.join('\n'));
  } finally {
    await stack.stop();
    upstream.process.kill();
    bare.process.kill();
  }
}

const role = process.argv[2];
if (role === 'upstream') runUpstream();
else if (role === 'bare') runBareProxy(process.argv[3] ?? '');
else
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
