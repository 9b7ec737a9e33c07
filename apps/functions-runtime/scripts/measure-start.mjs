// Start-up cost of one sandbox, four ways (README "Isolates: one per run"). Run after a build:
//   node --no-node-snapshot scripts/measure-start.mjs [runs=20]
// cold:     new isolate, evaluate the sandbox library (zod, URL, Buffer), compile and run a bundle
// cached:   new isolate, the library compiled from V8's code cache, compile and run a bundle (what the runtime does)
// snapshot: new isolate from the library's heap snapshot, compile and run a bundle
// warm:     one reused isolate, a new context per run, the library re-evaluated from its compiled script
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const ivm = require('isolated-vm');
const app = join(dirname(fileURLToPath(import.meta.url)), '..');
const lib = readFileSync(join(app, 'dist/sandbox-lib.js'), 'utf8');
const bundle = readFileSync(join(app, 'test/fixtures/sum-numbers.cjs'), 'utf8');
const wrapped = `globalThis.__factory = function (module, exports, require) {\n${bundle}\n};
const m = { exports: {} }; __factory(m, m.exports, () => __sandboxLib.zod());
m.exports.default.input.parse({ numbers: [1, 2], label: 'x' }) && 1;`;
const runs = Number(process.argv[2] ?? 20);

const time = (fn) => {
  const samples = [];
  for (let i = 0; i < runs; i++) {
    const t = process.hrtime.bigint();
    fn();
    samples.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  samples.sort((a, b) => a - b);
  return `median ${samples[Math.floor(runs / 2)].toFixed(1)} ms, p90 ${samples[Math.floor(runs * 0.9)].toFixed(1)} ms`;
};

let t = process.hrtime.bigint();
const snapshot = ivm.Isolate.createSnapshot([{ code: lib }]);
console.log(`snapshot made once per process: ${(Number(process.hrtime.bigint() - t) / 1e6).toFixed(0)} ms`);

console.log(
  'cold    ',
  time(() => {
    const isolate = new ivm.Isolate({ memoryLimit: 128 });
    const context = isolate.createContextSync();
    isolate.compileScriptSync(lib).runSync(context);
    isolate.compileScriptSync(wrapped).runSync(context);
    isolate.dispose();
  }),
);
const scratch = new ivm.Isolate({ memoryLimit: 64 });
const cachedData = scratch.compileScriptSync(lib, { produceCachedData: true }).cachedData;
scratch.dispose();
console.log(
  'cached  ',
  time(() => {
    const isolate = new ivm.Isolate({ memoryLimit: 128 });
    const context = isolate.createContextSync();
    isolate.compileScriptSync(lib, { cachedData }).runSync(context);
    isolate.compileScriptSync(wrapped).runSync(context);
    isolate.dispose();
  }),
);
console.log(
  'snapshot',
  time(() => {
    const isolate = new ivm.Isolate({ memoryLimit: 128, snapshot });
    const context = isolate.createContextSync();
    isolate.compileScriptSync(wrapped).runSync(context);
    isolate.dispose();
  }),
);
const shared = new ivm.Isolate({ memoryLimit: 128 });
const libScript = shared.compileScriptSync(lib);
console.log(
  'warm    ',
  time(() => {
    const context = shared.createContextSync();
    libScript.runSync(context);
    shared.compileScriptSync(wrapped).runSync(context);
    context.release();
  }),
);
