// CPU time of the runtime per run, pooled isolates against an isolate per run, through the real
// `runInSandbox` (README "Isolates"). Run after a build:
//   node --no-node-snapshot scripts/measure-runs.mjs [runs=200] [bundle=sum-numbers]
// Both modes run interleaved in chunks of 20 in this one process, so a busy host slows both alike; the
// figure is the process's own CPU time (user + system, every thread: the isolates run on their own)
// per run, and the wall time per run. Host calls are answered at once by a stub (no NATS, no proxy).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const app = join(dirname(fileURLToPath(import.meta.url)), '..');
const { configurePool, configureSpares, runInSandbox, sandboxLibrary } = require(
  join(app, 'dist/sandbox/sandbox.js'),
);
const runs = Number(process.argv[2] ?? 200);
const name = process.argv[3] ?? 'sum-numbers';
const code = readFileSync(join(app, 'test/fixtures', `${name}.cjs`), 'utf8');
const input = name === 'sum-numbers' ? { numbers: [1, 2, 3], label: 'x' } : {};

sandboxLibrary();
configureSpares(0, 128);
const request = (poolKey) => ({
  type: 'action',
  name,
  code,
  input,
  connectionId: 'c',
  providerConfigKey: 'p',
  provider: 'p',
  invocationId: '00000000-0000-4000-8000-000000000000',
  variant: 'base',
  limits: {
    memoryMb: 128,
    cpuTimeMs: 10_000,
    wallTimeMs: 10_000,
    outputBytes: 1 << 20,
    logLines: 100,
    logLineChars: 1000,
    logTotalChars: 100_000,
    abortGraceMs: 0,
  },
  hostCall: () =>
    Promise.resolve(JSON.stringify({ ok: true, value: { status: 200, headers: {}, data: {} } })),
  onWallClock: () => undefined,
  ...(poolKey ? { poolKey } : {}),
});

const totals = { pooled: { cpu: 0, wall: 0, n: 0, reused: 0 }, fresh: { cpu: 0, wall: 0, n: 0, reused: 0 } };
async function chunk(mode, count) {
  configurePool(mode === 'pooled' ? 16 : 0);
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    const outcome = await runInSandbox(request(mode === 'pooled' ? 'env\u0000fn\u0000sha' : undefined));
    if (outcome.status !== 'success') throw new Error(`${mode}: ${JSON.stringify(outcome.error)}`);
    if (outcome.reusedIsolate) totals[mode].reused++;
  }
  const used = process.cpuUsage(cpu);
  totals[mode].cpu += (used.user + used.system) / 1000;
  totals[mode].wall += performance.now() - started;
  totals[mode].n += count;
}

for (let i = 0; i < 2; i++) await chunk(i % 2 ? 'fresh' : 'pooled', 10); // warm-up (not counted)
for (const mode of ['pooled', 'fresh']) totals[mode] = { cpu: 0, wall: 0, n: 0, reused: 0 };
for (let done = 0; done < runs; done += 20) {
  await chunk('pooled', 20);
  await chunk('fresh', 20);
}
const line = (mode) => {
  const t = totals[mode];
  return `${mode.padEnd(6)} ${(t.cpu / t.n).toFixed(2)} ms CPU, ${(t.wall / t.n).toFixed(2)} ms wall per run (${t.n} runs, ${t.reused} on a reused isolate)`;
};
console.log(`${name}: ${line('pooled')}`);
console.log(`${name}: ${line('fresh')}`);
console.log(`fresh / pooled CPU per run: ${(totals.fresh.cpu / totals.pooled.cpu).toFixed(2)}`);
configurePool(0);
