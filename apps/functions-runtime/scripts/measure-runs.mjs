// CPU time of the runtime per run, and the time a run takes (its latency), through the real
// `runInSandbox` (README "Isolates"): pooled isolates with ready contexts (`ready`, the default), pooled
// isolates that make each run's context on its path (`pooled`), and an isolate per run (`fresh`). Run
// after a build:
//   node --no-node-snapshot scripts/measure-runs.mjs [runs=200] [bundle=sum-numbers|path] [gapMs=2]
// The modes run interleaved in chunks of 20 in this one process, so a busy host slows all alike; spare
// isolates made meanwhile are counted in the chunk that made them. Figures:
// the process's own CPU time (user + system, every thread: the isolates run on their own) per run,
// ready contexts' making included; the median and p90 of `runInSandbox`'s own time; the isolate CPU
// charged to the run. Runs are `gapMs` apart (a request's way through the other services), the time a
// ready context is made in. Host calls are answered at once by a stub (no NATS, no proxy).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const app = join(dirname(fileURLToPath(import.meta.url)), '..');
const {
  configurePool,
  configureReadyContexts,
  configureSpares,
  runInSandbox,
  sandboxLibrary,
  sandboxMemory,
} = require(join(app, 'dist/sandbox/sandbox.js'));
const runs = Number(process.argv[2] ?? 200);
const name = process.argv[3] ?? 'sum-numbers';
// A fixture's name, or the path of a bundle (e.g. the bench's action, which makes one nango.get).
const code = readFileSync(/[./]/.test(name) ? name : join(app, 'test/fixtures', `${name}.cjs`), 'utf8');
const input = name === 'sum-numbers' ? { numbers: [1, 2, 3], label: 'x' } : {};
const gapMs = Number(process.argv[4] ?? 2);
const modes = ['ready', 'pooled', 'fresh'];

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

const empty = () => ({ cpu: 0, n: 0, reused: 0, ready: 0, charged: 0, times: [] });
let totals = Object.fromEntries(modes.map((m) => [m, empty()]));
const pause = () => new Promise((resolve) => setTimeout(resolve, gapMs));
// As the service's defaults: 16 pooled isolates, 2 spares (which `fresh` runs use too: an isolate per run,
// made ahead of need). Each mode has its own pool key, kept between its chunks.
configurePool(16);
configureSpares(2, 128);
async function chunk(mode, count) {
  configureReadyContexts(mode === 'ready');
  await pause();
  const t = totals[mode];
  const cpu = process.cpuUsage();
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const outcome = await runInSandbox(request(mode === 'fresh' ? undefined : `env\u0000fn\u0000${mode}`));
    t.times.push(performance.now() - started);
    if (outcome.status !== 'success') throw new Error(`${mode}: ${JSON.stringify(outcome.error)}`);
    if (outcome.reusedIsolate) t.reused++;
    if (outcome.readyContext) t.ready++;
    t.charged += outcome.cpuTimeMs;
    await pause();
  }
  const used = process.cpuUsage(cpu);
  // The pauses are idle but for the ready context being made: counted, it is CPU the run costs.
  t.cpu += (used.user + used.system) / 1000;
  t.n += count;
}

for (const mode of modes) await chunk(mode, 10); // warm-up (not counted)
totals = Object.fromEntries(modes.map((m) => [m, empty()]));
for (let done = 0; done < runs; done += 20) {
  for (const mode of modes) await chunk(mode, 20);
}
const quantile = (values, q) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))];
const line = (mode) => {
  const t = totals[mode];
  return `${mode.padEnd(6)} ${(t.cpu / t.n).toFixed(2)} ms CPU/run, run time p50 ${quantile(t.times, 0.5).toFixed(2)} ms p90 ${quantile(t.times, 0.9).toFixed(2)} ms, isolate CPU charged ${(t.charged / t.n).toFixed(2)} ms (${t.n} runs, ${t.reused} on a reused isolate, ${t.ready} on a ready context)`;
};
for (const mode of modes) console.log(`${name}: ${line(mode)}`);
console.log(
  `pooled / ready run time p50: ${(quantile(totals.pooled.times, 0.5) / quantile(totals.ready.times, 0.5)).toFixed(2)}; CPU per run ready / pooled: ${(totals.ready.cpu / totals.pooled.cpu).toFixed(2)}`,
);

// What an idle pooled isolate holds, with its ready context and without one.
const heapOf = async (mode) => {
  configureSpares(0, 128);
  configurePool(0);
  configurePool(16);
  configureReadyContexts(mode === 'ready');
  await runInSandbox(request(`env\u0000fn\u0000heap-${mode}`));
  await new Promise((resolve) => setTimeout(resolve, 200));
  return sandboxMemory();
};
for (const mode of ['ready', 'pooled']) {
  const m = await heapOf(mode);
  console.log(
    `idle pooled isolate (${mode}): ${m.isolates} isolate, heap used ${(m.usedHeapBytes / 2 ** 20).toFixed(2)} MiB of ${(m.totalHeapBytes / 2 ** 20).toFixed(2)} MiB`,
  );
}
configurePool(0);
