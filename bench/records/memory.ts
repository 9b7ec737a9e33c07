/**
 * Phase 4: the memory run (RSS of functions-runtime and sync-orchestrator, the runtime's own account) and
 * its tables.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import type { Stack } from '@switchboard/testing';
import type { Inspector } from '../tools/inspector';
import { fmt, syncBundle, timed, type RunSync } from './common';
import { FLAT_MAX_GROWTH, SETTINGS, num } from './settings';

function rssMb(pid: number): number {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return NaN; // the process is gone: the table shows it
  }
  const line = status.split('\n').find((l) => l.startsWith('VmRSS:'));
  return Number(line?.split(/\s+/)[1] ?? 0) / 1024;
}

const MB = 1024 * 1024;
interface RssSample {
  at: number;
  runtime: number;
  orchestrator: number;
}
/** functions-runtime's own account of its memory, read through its inspector (bytes). */
interface RuntimeMemory {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
  isolates: number;
  isolatesHeap: number;
  isolatesUsed: number;
  /** V8's spaces of the main isolate (new, old, large-object, ...): used / committed bytes. */
  spaces: Record<string, { used: number; size: number }>;
  at?: number;
}
const RUNTIME_MEMORY = `(() => {
  const m = process.memoryUsage();
  const s = process.mainModule.require('./sandbox/sandbox.js').sandboxMemory();
  const spaces = {};
  for (const x of process.getBuiltinModule('v8').getHeapSpaceStatistics())
    spaces[x.space_name.replace(/_space$/, '')] = { used: x.space_used_size, size: x.space_size };
  return { rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external,
    arrayBuffers: m.arrayBuffers, isolates: s.isolates, isolatesHeap: s.totalHeapBytes, isolatesUsed: s.usedHeapBytes,
    spaces };
})()`;

/** The sample at a fraction of the run (by time: the script saves at a steady pace). */
const at = <T>(samples: T[], q: number): T | undefined =>
  samples[Math.min(samples.length - 1, Math.floor((samples.length - 1) * q))];
/** The highest value in a window of the run (RSS is a sawtooth: a window's top is steadier than a point). */
const topOf = (values: number[], from: number, to: number): number =>
  Math.max(...values.slice(Math.floor((values.length - 1) * from), Math.floor((values.length - 1) * to) + 1));

/**
 * The memory run: one sync saving `--memory-records` records, with the RSS of functions-runtime and
 * sync-orchestrator sampled every 250 ms and the runtime's own breakdown (V8 heap, external memory,
 * array buffers, its isolates' heaps) every second through its inspector; after the run, the same
 * breakdown once more, then after a forced full collection, which separates garbage V8 had not
 * collected yet from what is still referenced.
 */
export async function memoryRun(stack: Stack, runSync: RunSync, inspector: Inspector) {
  const m = SETTINGS.memoryRecords;
  console.log(`memory: a sync saving ${fmt(m)} records, RSS sampled...`);
  const pids = {
    runtime: stack.services['functions-runtime'].process.pid!,
    orchestrator: stack.services['sync-orchestrator'].process.pid!,
  };
  const runtimeMemory = () => inspector.evaluate<RuntimeMemory>(RUNTIME_MEMORY);
  if (SETTINGS.runtimeV8Flags) {
    // Printed to the service's output (SWITCHBOARD_TEST_LOGS=1 shows it).
    await inspector.evaluate(
      `process.getBuiltinModule('v8').setFlagsFromString(${JSON.stringify(SETTINGS.runtimeV8Flags)})`,
    );
  }
  const before = await runtimeMemory();
  const samples: RssSample[] = [];
  const heaps: RuntimeMemory[] = [];
  const started = performance.now();
  const sampler = setInterval(() => {
    samples.push({
      at: performance.now() - started,
      runtime: rssMb(pids.runtime),
      orchestrator: rssMb(pids.orchestrator),
    });
  }, 250);
  let reading = false;
  const heapSampler = setInterval(() => {
    if (reading) return;
    reading = true;
    runtimeMemory()
      .then((h) => heaps.push({ ...h, at: performance.now() - started }))
      .catch(() => undefined)
      .finally(() => (reading = false));
  }, 1000);
  let snapshotTimer: NodeJS.Timeout | undefined;
  if (SETTINGS.heapSnapshots) {
    // A snapshot collects garbage first and stops the process while it is written: one, mid-run.
    const afterMs = num('heap-snapshot-after-s', 60) * 1000;
    snapshotTimer = setTimeout(() => {
      const path = join(SETTINGS.heapSnapshots!, `functions-runtime-mid-${Date.now()}.heapsnapshot`);
      inspector.heapSnapshot(path).then(
        () => console.log(`heap snapshot: ${path}`),
        (error: unknown) => console.log(`heap snapshot failed: ${String(error)}`),
      );
    }, afterMs);
  }
  let memoryMs: number;
  const { cpuMicros } = await import('../tools/proc');
  const cpuBefore = { runtime: cpuMicros(pids.runtime), orchestrator: cpuMicros(pids.orchestrator) };
  const cpu = { runtime: 0, orchestrator: 0 };
  if (SETTINGS.allocProfile) await inspector.startAllocationSampling(true);
  try {
    memoryMs = await timed(() => runSync(syncBundle(m, 'new')));
    cpu.runtime = cpuMicros(pids.runtime) - cpuBefore.runtime;
    cpu.orchestrator = cpuMicros(pids.orchestrator) - cpuBefore.orchestrator;
  } finally {
    clearInterval(sampler);
    clearInterval(heapSampler);
    clearTimeout(snapshotTimer);
  }
  if (SETTINGS.allocProfile) {
    // A young-generation collection first: garbage still sitting in new space would count as surviving.
    await inspector.evaluate(
      `(process.getBuiltinModule('v8').setFlagsFromString('--expose-gc'), process.getBuiltinModule('vm').runInNewContext('gc')({ type: 'minor' }), 0)`,
    );
    await inspector.stopAllocationSampling(SETTINGS.allocProfile);
    console.log(`allocation profile: ${SETTINGS.allocProfile}`);
  }
  const after = await runtimeMemory();
  await inspector.collectGarbage();
  const collected = await runtimeMemory();
  if (SETTINGS.heapSnapshots) {
    const path = join(SETTINGS.heapSnapshots, `functions-runtime-end-${Date.now()}.heapsnapshot`);
    await inspector.heapSnapshot(path);
    console.log(`heap snapshot: ${path}`);
  }
  if (SETTINGS.memorySeries) {
    writeFileSync(
      SETTINGS.memorySeries,
      JSON.stringify({ m, memoryMs, cpu, samples, heaps, before, after, collected }),
    );
    console.log(`memory series: ${SETTINGS.memorySeries}`);
  }
  return { m, memoryMs, cpu, samples, heaps, before, after, collected };
}

export function printMemory(r: Awaited<ReturnType<typeof memoryRun>>): void {
  const { m, memoryMs, samples, heaps } = r;
  // microseconds per record = milliseconds per 1000 records
  const perRecord = (us: number) => (us / m).toFixed(1);
  console.log(
    `\nRSS during the ${fmt(m)}-record run (${(memoryMs / 1000).toFixed(1)} s; CPU per 1000 records: functions-runtime ${perRecord(r.cpu.runtime)} ms, sync-orchestrator ${perRecord(r.cpu.orchestrator)} ms; load ${os.loadavg()[0]!.toFixed(1)}), MB:\n`,
  );
  console.log('| progress | functions-runtime | sync-orchestrator |');
  console.log('|---|---|---|');
  for (const q of [0, 0.25, 0.5, 0.75, 1]) {
    const sample = at(samples, q);
    if (sample)
      console.log(
        `| ${Math.round(q * 100)} % | ${sample.runtime.toFixed(0)} | ${sample.orchestrator.toFixed(0)} |`,
      );
  }
  const max = (key: 'runtime' | 'orchestrator') => Math.max(...samples.map((x) => x[key]));
  console.log(`| max | ${max('runtime').toFixed(0)} | ${max('orchestrator').toFixed(0)} |`);

  const mb = (n: number) => (n / MB).toFixed(0);
  const row = (label: string, h: RuntimeMemory) =>
    console.log(
      `| ${label} | ${mb(h.rss)} | ${mb(h.heapUsed)} / ${mb(h.heapTotal)} | ${mb(h.external)} | ${mb(h.arrayBuffers)} | ${h.isolates}: ${mb(h.isolatesUsed)} / ${mb(h.isolatesHeap)} |`,
    );
  console.log('\nfunctions-runtime by its own account (process.memoryUsage() and its isolates), MB:\n');
  console.log(
    '| when | RSS | V8 heap used / total | external | of which array buffers | isolates: heap used / total |',
  );
  console.log('|---|---|---|---|---|---|');
  row('before the run', r.before);
  for (const q of [0.25, 0.5, 0.75, 1]) {
    const h = at(heaps, q);
    if (h) row(`${Math.round(q * 100)} %`, h);
  }
  row('after the run', r.after);
  row('after a forced full GC', r.collected);

  // Which of V8's spaces holds what (used / committed): garbage waiting for a scavenge sits in new space,
  // garbage waiting for a mark-compact in old and large-object space.
  const SPACES = ['new', 'old', 'large_object', 'new_large_object', 'code'];
  const space = (h: RuntimeMemory, name: string) => {
    const x = h.spaces?.[name];
    return x ? `${mb(x.used)} / ${mb(x.size)}` : '';
  };
  console.log('\nfunctions-runtime: V8 spaces of its main isolate, used / committed MB:\n');
  console.log(`| when | ${SPACES.join(' | ')} |`);
  console.log(`|---|${SPACES.map(() => '---').join('|')}|`);
  const spaceRow = (label: string, h: RuntimeMemory) =>
    console.log(`| ${label} | ${SPACES.map((n) => space(h, n)).join(' | ')} |`);
  spaceRow('before the run', r.before);
  for (const q of [0.25, 0.5, 0.75, 1]) {
    const h = at(heaps, q);
    if (h) spaceRow(`${Math.round(q * 100)} %`, h);
  }
  spaceRow('after a forced full GC', r.collected);

  // The verdict: the top of the RSS sawtooth just before half-way against its top at the end.
  const verdict = (name: string, key: 'runtime' | 'orchestrator') => {
    const values = samples.map((x) => x[key]).filter((v) => Number.isFinite(v));
    if (values.length < 20) return `${name}: too few samples`;
    const mid = topOf(values, 0.4, 0.5);
    const end = topOf(values, 0.9, 1);
    const growth = end - mid;
    const flat = growth <= mid * FLAT_MAX_GROWTH;
    return `${name} ${mid.toFixed(0)} → ${end.toFixed(0)} MB: ${growth >= 0 ? '+' : ''}${growth.toFixed(0)} MB (${growth >= 0 ? '+' : ''}${((growth / mid) * 100).toFixed(1)} %) ${flat ? 'flat' : 'GROWING'}`;
  };
  console.log(
    `\nverdict (RSS growth over the last half: top of 40–50 % → top of 90–100 %, flat if ≤ ${FLAT_MAX_GROWTH * 100} %): ${verdict('functions-runtime', 'runtime')}; ${verdict('sync-orchestrator', 'orchestrator')}`,
  );
}
