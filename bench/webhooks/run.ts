/**
 * `pnpm --filter bench run webhooks`: provider webhook in → signed delivery out, end to end, on this
 * machine. A Linear webhook (signed with the integration's secret, routed to a connection by its
 * `organizationId`) is POSTed to the gateway at a fixed open-loop rate; a receiver on loopback checks
 * each delivery's `X-Nango-Hmac-Sha256` and records when it arrived. Prints p50/p90/p99/max of
 * (delivery received − webhook sent) and of the provider's own 2xx, against the targets of
 * reliability.md §2.4 (p50 ≤ 10 ms, p99 ≤ 50 ms at 200 events/s).
 *
 * Needs the built services (`pnpm build`) and the test infrastructure variables (TEST_DATABASE_URL,
 * TEST_NATS_URL, TEST_TEMPORAL_ADDRESS, TEST_REDIS_URL); see bench/README.md.
 * Flags: --rate=200 --seconds=20 --warmup-seconds=3. BENCH_PROFILE=<service,...> writes CPU profiles.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { execSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { startStack } from '@switchboard/testing';
import { Pool } from 'undici';
import { cpuMicrosOfStat } from '../tools/proc';
import { benchArgs } from '../tools/args';

const { args, num } = benchArgs();
const RATE = num('rate', 200);
const SECONDS = num('seconds', 20);
const WARMUP_SECONDS = num('warmup-seconds', 3);
const SECRET = `bench-${randomUUID()}`;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}
const fmt = (ms: number) => `${ms.toFixed(2)} ms`;

/**
 * CPU time (user + system, µs) of every process on the machine, grouped by what it is. The host runs other
 * stacks beside this one (their own NATS servers, their databases on the same Postgres): only this stack's
 * NATS server (by its port) and the Postgres backends of its database are counted as ours; the cluster's
 * shared background processes (WAL writer, checkpointer) and everything else go to `other`.
 */
function cpuByGroup(labels: Map<number, string>, natsPort: string, database: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    let stat: string;
    let cmdline: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    const micros = cpuMicrosOfStat(stat);
    const args = cmdline.split('\0');
    const group =
      labels.get(pid) ??
      (pid === process.pid
        ? 'bench (sender + receiver)'
        : cmdline.startsWith('postgres') && cmdline.includes(` ${database} `)
          ? 'postgres'
          : cmdline.includes('nats-server') && args[args.indexOf('-p') + 1] === natsPort
            ? 'nats-server'
            : 'other');
    out.set(group, (out.get(group) ?? 0) + micros);
  }
  return out;
}

async function main(): Promise<void> {
  // ---- receiver: verifies and timestamps every delivery ----
  let signingKey = '';
  const arrivals = new Map<string, number>();
  let badSignatures = 0;
  // Deliveries of one event arriving more than once (same `webhook-id`): at-least-once allows it after a
  // crash or a failed write; a healthy run should show none.
  const seenWebhookIds = new Set<string>();
  let duplicates = 0;
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = performance.now();
      const body = Buffer.concat(chunks).toString('utf8');
      const expected = createHmac('sha256', signingKey).update(body).digest('hex');
      if (req.headers['x-nango-hmac-sha256'] !== expected) badSignatures++;
      const webhookId = String(req.headers['webhook-id']);
      if (seenWebhookIds.has(webhookId)) duplicates++;
      else seenWebhookIds.add(webhookId);
      const parsed = JSON.parse(body) as { type?: string; payload?: { data?: { benchId?: string } } };
      const id = parsed.payload?.data?.benchId;
      if (parsed.type === 'forward' && id && !arrivals.has(id)) arrivals.set(id, at);
      res.writeHead(200).end();
    });
  });
  receiver.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

  const stack = await startStack({
    // On a shared host (load average 20–50) seven services can take minutes to boot.
    readyTimeoutMs: 300_000,
    env: {
      LOG_LEVEL: 'warn',
      SWITCHBOARD_RATE_LIMIT_PER_MIN: '1000000',
      // Every event comes from one loopback sender into one environment: the ingress windows are not measured here.
      SWITCHBOARD_WEBHOOK_RATE_LIMIT_PER_IP_PER_MIN: '1000000',
      SWITCHBOARD_WEBHOOK_RATE_LIMIT_PER_ENV_PER_MIN: '1000000',
      SWITCHBOARD_EGRESS_ALLOW: '127.0.0.1',
      ...(process.env.BENCH_RELAY_ENDPOINT_CONCURRENCY
        ? { SWITCHBOARD_WEBHOOK_ENDPOINT_CONCURRENCY: process.env.BENCH_RELAY_ENDPOINT_CONCURRENCY }
        : {}),
      // `--otel=off` runs every service without OpenTelemetry, to show what tracing costs.
      ...(args.get('otel') === 'off' ? { OTEL_SDK_DISABLED: 'true' } : {}),
    },
    // BENCH_PROFILE=gateway,webhook-relay writes a V8 CPU profile of each named service (during the
    // measured run) to /tmp/bench-prof/<name>/; open it in Chrome DevTools.
    serviceEnv: Object.fromEntries(
      (process.env.BENCH_PROFILE ?? '')
        .split(',')
        .filter(Boolean)
        .map((name) => [
          name,
          {
            NODE_OPTIONS: `--require ${join(__dirname, '../../tools/cpu-profile.cjs')}`,
            BENCH_PROFILE_DIR: `/tmp/bench-prof/${name}`,
            // Started and stopped by SIGUSR2 around the measured run (see below).
            BENCH_PROFILE_DELAY_MS: 'signal',
          },
        ]),
    ),
  });
  const gateway = new Pool(stack.gatewayUrl, { connections: 64, keepAliveTimeout: 60_000 });
  const api = async (method: 'GET' | 'POST' | 'PATCH', path: string, body?: unknown) => {
    const res = await gateway.request({
      method,
      path,
      headers: { authorization: `Bearer ${stack.secretKey}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await res.body.json()) as Record<string, unknown>;
    if (res.statusCode >= 300)
      throw new Error(`${method} ${path}: ${res.statusCode} ${JSON.stringify(json)}`);
    return json;
  };

  try {
    const env = (await api('PATCH', '/environment', {
      webhook_settings: { primary_url: `${receiverUrl}/hook` },
    })) as {
      data: { webhook_signing_key: string };
    };
    signingKey = env.data.webhook_signing_key;
    await api('POST', '/integrations', {
      provider: 'linear',
      unique_key: 'linear',
      credentials: { type: 'OAUTH2', client_id: 'bench', client_secret: 'bench', webhook_secret: SECRET },
    });
    await api('POST', '/connections', {
      provider_config_key: 'linear',
      connection_id: 'bench-connection',
      credentials: { type: 'OAUTH2', access_token: 'bench' },
      connection_config: { organizationId: 'org-bench' },
    });

    const sent = new Map<string, number>();
    const acks: number[] = [];
    let non2xx = 0;
    const send = async (benchId: string) => {
      const body = JSON.stringify({
        action: 'update',
        type: 'Issue',
        organizationId: 'org-bench',
        webhookTimestamp: Date.now(),
        data: { benchId, title: 'Benchmark issue', description: 'x'.repeat(600) },
      });
      const started = performance.now();
      sent.set(benchId, started);
      const res = await gateway.request({
        method: 'POST',
        path: `/webhook/${stack.environmentUuid}/linear`,
        headers: {
          'content-type': 'application/json',
          'linear-signature': createHmac('sha256', SECRET).update(body).digest('hex'),
          'linear-delivery': benchId,
        },
        body,
      });
      await res.body.dump();
      acks.push(performance.now() - started);
      if (res.statusCode !== 200) non2xx++;
    };

    const run = async (seconds: number, label: string) => {
      const total = Math.round(RATE * seconds);
      const ids: string[] = [];
      const start = performance.now();
      const inflight: Promise<void>[] = [];
      for (let i = 0; i < total; i++) {
        const due = start + (i * 1000) / RATE;
        const wait = due - performance.now();
        if (wait > 1) await new Promise((r) => setTimeout(r, wait));
        const id = `${label}-${i}`;
        ids.push(id);
        inflight.push(send(id));
      }
      await Promise.all(inflight);
      const deadline = performance.now() + 30_000;
      while (ids.some((id) => !arrivals.has(id)) && performance.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      return ids;
    };

    await run(WARMUP_SECONDS, 'warmup');
    acks.length = 0;
    non2xx = 0;
    const labels = new Map(
      Object.entries(stack.services).map(([name, service]) => [service.process.pid!, name]),
    );
    const profiled = (process.env.BENCH_PROFILE ?? '').split(',').filter(Boolean);
    const markProfiles = () => {
      for (const name of profiled)
        stack.services[name as keyof typeof stack.services]?.process.kill('SIGUSR2');
    };
    const loadBefore = os.loadavg()[0]!;
    duplicates = 0;
    markProfiles();
    const natsPort = new URL(stack.natsUrl).port;
    const database = new URL(stack.databaseUrl).pathname.slice(1);
    const cpuBefore = cpuByGroup(labels, natsPort, database);
    const ids = await run(SECONDS, 'measure');
    const cpuAfter = cpuByGroup(labels, natsPort, database);
    markProfiles();
    const loadAfter = os.loadavg()[0]!;
    const cpuPerEvent = [...cpuAfter.entries()]
      .map(([group, micros]) => [group, (micros - (cpuBefore.get(group) ?? 0)) / ids.length] as const)
      .filter(([, micros]) => micros >= 10)
      .sort((a, b) => b[1] - a[1]);
    const latencies = ids.flatMap((id) => {
      const at = arrivals.get(id);
      const from = sent.get(id);
      return at !== undefined && from !== undefined ? [at - from] : [];
    });
    latencies.sort((a, b) => a - b);
    acks.sort((a, b) => a - b);

    let sha = 'unknown';
    try {
      sha = execSync('git rev-parse --short HEAD', { encoding: 'utf8' }).trim();
    } catch {
      // not a git checkout
    }
    const p50 = percentile(latencies, 50);
    const p99 = percentile(latencies, 99);
    const lines = [
      `webhooks bench — ${new Date().toISOString()}, git ${sha}, node ${process.version}, ${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'})`,
      `rate ${RATE} events/s for ${SECONDS} s (after ${WARMUP_SECONDS} s warm-up): ${ids.length} sent, ${latencies.length} delivered, ${non2xx} non-200 answers, ${badSignatures} bad signatures, ${duplicates} duplicate deliveries`,
      `host load average (1 min) ${loadBefore.toFixed(1)} before, ${loadAfter.toFixed(1)} after the measured run`,
      `provider webhook in → signed delivery at the receiver: p50 ${fmt(p50)}, p90 ${fmt(percentile(latencies, 90))}, p99 ${fmt(p99)}, max ${fmt(latencies.at(-1) ?? NaN)}`,
      `provider's 2xx (stored on JetStream): p50 ${fmt(percentile(acks, 50))}, p99 ${fmt(percentile(acks, 99))}`,
      `targets p50 ≤ 10 ms: ${p50 <= 10 ? 'met' : 'MISSED'}; p99 ≤ 50 ms: ${p99 <= 50 ? 'met' : 'MISSED'}`,
      `CPU per event (whole machine, measured run incl. its drain): ${cpuPerEvent.map(([group, micros]) => `${group} ${micros.toFixed(0)} µs`).join(', ')}`,
      `CPU per event, Switchboard's processes (services, its nats-server, its postgres backends): ${cpuPerEvent
        .filter(([group]) => group !== 'other' && !group.startsWith('bench'))
        .reduce((sum, [, micros]) => sum + micros, 0)
        .toFixed(0)} µs (target ≤ 1000 µs)`,
    ];
    for (const line of lines) process.stdout.write(`${line}\n`);
    if (latencies.length !== ids.length) process.exitCode = 1;
  } finally {
    await gateway.close();
    await stack.stop();
    receiver.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
