// Preloaded with `--require` (BENCH_PROFILE): records a V8 CPU profile of this process from
// BENCH_PROFILE_DELAY_MS after start for BENCH_PROFILE_MS, into BENCH_PROFILE_DIR.
const { Session } = require('node:inspector');
const { mkdirSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

const dir = process.env.BENCH_PROFILE_DIR;
const delay = Number(process.env.BENCH_PROFILE_DELAY_MS ?? 0);
const duration = Number(process.env.BENCH_PROFILE_MS ?? 20000);
const session = new Session();
session.connect();
setTimeout(() => {
  session.post('Profiler.enable', () =>
    session.post('Profiler.start', () => {
      setTimeout(() => {
        session.post('Profiler.stop', (error, result) => {
          if (!error) {
            mkdirSync(dir, { recursive: true });
            writeFileSync(join(dir, `${process.pid}.cpuprofile`), JSON.stringify(result.profile));
          }
        });
      }, duration).unref();
    }),
  );
}, delay).unref();
