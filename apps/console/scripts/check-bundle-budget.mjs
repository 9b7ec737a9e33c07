// Fails when the first load of the console (the entry chunk and every chunk it imports statically, as
// recorded in Vite's manifest) is over its gzipped JavaScript budget. Pages are lazy chunks and do not count.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

const BUDGET_BYTES = Number(process.env.CONSOLE_JS_BUDGET_BYTES ?? 250 * 1024);
const dist = join(import.meta.dirname, '..', 'dist');
const manifest = JSON.parse(readFileSync(join(dist, '.vite', 'manifest.json'), 'utf8'));

const entries = Object.entries(manifest).filter(([, chunk]) => chunk.isEntry);
if (entries.length !== 1)
  throw new Error(`expected one entry chunk in the manifest, found ${entries.length}`);

const seen = new Set();
const visit = (key) => {
  if (seen.has(key)) return;
  seen.add(key);
  for (const next of manifest[key]?.imports ?? []) visit(next);
};
visit(entries[0][0]);

let total = 0;
for (const key of seen) {
  const file = manifest[key].file;
  const size = gzipSync(readFileSync(join(dist, file)), { level: 9 }).length;
  total += size;
  console.log(`${file}: ${(size / 1024).toFixed(1)} KiB gzipped`);
}
const line = `first load: ${(total / 1024).toFixed(1)} KiB gzipped JavaScript (budget ${(BUDGET_BYTES / 1024).toFixed(0)} KiB)`;
if (total > BUDGET_BYTES) {
  console.error(`${line}: over budget`);
  process.exit(1);
}
console.log(line);
