// The order of the e2e files over jest's workers. Starting a stack of a file's own stops the worker's shared
// stacks (`standardStack()`, `startStack({ shared: true })`: they would answer its requests on the common
// NATS), so the files on the shared stack run together and the shared stack boots once per worker.
//
// The longest files have stacks of their own, and the run is as long as its busiest worker: one of them
// started last is the run's tail. So they go first (longest first, one per free worker), then the files on
// the shared stack, then the other files with stacks of their own. Within each group jest's order stands
// (on a fresh clone, largest file first; later, slowest first by its timing cache).
const { basename } = require('node:path');
const { readFileSync } = require('node:fs');
const Sequencer = require('@jest/test-sequencer').default;

const SHARED = /\bstandardStack(WithGateway)?\(|shared:\s*true/;

// The longest files with stacks of their own, longest first (as timed in a whole `npm test` run).
const LONGEST = [
  'syncs-recovery.e2e-spec.ts',
  'console.e2e-spec.ts',
  'webhook-durability.e2e-spec.ts',
  'webhook-sigkill.e2e-spec.ts',
  'functions-processes.e2e-spec.ts',
  'replicas.e2e-spec.ts',
  // One test, but it waits out a 20 s sync timeout: last, it would be the run's tail.
  'sync-timeout.e2e-spec.ts',
];

class LongestFirstSequencer extends Sequencer {
  async sort(tests) {
    const ordered = await super.sort(tests);
    const rank = (test) => LONGEST.indexOf(basename(test.path));
    const longest = ordered.filter((t) => rank(t) >= 0).sort((a, b) => rank(a) - rank(b));
    const rest = ordered.filter((t) => rank(t) < 0);
    const usesShared = (test) => SHARED.test(readFileSync(test.path, 'utf8'));
    return [...longest, ...rest.filter(usesShared), ...rest.filter((t) => !usesShared(t))];
  }
}

module.exports = LongestFirstSequencer;
