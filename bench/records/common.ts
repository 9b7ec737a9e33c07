/**
 * What the records bench's phases share: the record written, the sync bundle that writes it, timing and
 * formatting.
 */
import type { FunctionRunResult } from '@switchboard/contracts';
import { BATCH } from './settings';

/** A record of about 1 KB of JSON; `version` is what makes a changed one differ. */
export function record(i: number, version: number): Record<string, unknown> {
  return {
    id: `r-${i}`,
    name: `Record number ${i}`,
    email: `person-${i}@example.com`,
    version,
    tags: ['alpha', 'beta', 'gamma'],
    notes: 'x'.repeat(880),
  };
}
/** The measured round: the same ids, odd ones changed, even ones unchanged (50 %). */
export const halfChanged = (i: number) => record(i, i % 2 === 0 ? 1 : 2);

export const perSecond = (n: number, ms: number) => (n / ms) * 1000;
export const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
export const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;

export async function timed(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

/** A sync bundle shaped like the nango CLI's output: `total` records of ~1 KB, saved 1000 at a time. */
export function syncBundle(total: number, round: 'new' | 'half-changed'): string {
  return `"use strict";
const record = (i, version) => ({ id: "r-" + i, name: "Record number " + i, email: "person-" + i + "@example.com",
  version, tags: ["alpha", "beta", "gamma"], notes: "x".repeat(880) });
module.exports = { default: { type: "sync", models: { BenchRecord: {} },
  exec: async (nango) => {
    for (let i = 0; i < ${total}; i += ${BATCH}) {
      const batch = [];
      for (let k = i; k < Math.min(i + ${BATCH}, ${total}); k++) {
        batch.push(record(k, ${round === 'new' ? '1' : 'k % 2 === 0 ? 1 : 2'}));
      }
      await nango.batchSave(batch, "BenchRecord");
    }
  } } };`;
}

export type RunSync = (code: string) => Promise<FunctionRunResult>;
