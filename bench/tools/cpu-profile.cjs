// Preloaded with `--require` by the benches: records a V8 CPU profile of this process, starting
// BENCH_PROFILE_DELAY_MS after start, for BENCH_PROFILE_MS (or until the process exits), into
// BENCH_PROFILE_DIR/<pid>.cpuprofile. With BENCH_PROFILE_DELAY_MS=signal it starts on the first SIGUSR2
// and stops on the next (a bench marks its measured run exactly, however long the stack took to boot).
const { Session } = require('node:inspector');
const { mkdirSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

const dir = process.env.BENCH_PROFILE_DIR;
const delay = Number(process.env.BENCH_PROFILE_DELAY_MS ?? 0) || 0;
const duration = Number(process.env.BENCH_PROFILE_MS ?? 0);
const session = new Session();
session.connect();
let running = false;

// The in-process inspector session answers synchronously, so this also works from an `exit` handler.
function stop() {
  if (!running) return;
  running = false;
  session.post('Profiler.stop', (error, result) => {
    if (error) return;
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `${process.pid}.cpuprofile`), JSON.stringify(result.profile));
  });
}

function start() {
  session.post('Profiler.enable', () =>
    session.post('Profiler.start', () => {
      running = true;
      if (duration > 0) setTimeout(stop, duration).unref();
    }),
  );
}

if (process.env.BENCH_PROFILE_DELAY_MS === 'signal') {
  let started = false;
  process.on('SIGUSR2', () => {
    if (started) return stop();
    started = true;
    start();
  });
} else setTimeout(start, delay).unref();
process.on('exit', stop);
