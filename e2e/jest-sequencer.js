// Files on the worker's shared stack (`standardStack()`, `startStack({ shared: true })`) run first, then the
// files with stacks of their own: starting one stops the shared stacks (they would answer its requests on
// the common NATS), so this order boots the shared stack once. Within each group jest's own order stands.
const { readFileSync } = require('node:fs');
const Sequencer = require('@jest/test-sequencer').default;

const SHARED = /\bstandardStack(WithGateway)?\(|shared:\s*true/;

class SharedFirstSequencer extends Sequencer {
  async sort(tests) {
    const ordered = await super.sort(tests);
    const usesShared = (test) => SHARED.test(readFileSync(test.path, 'utf8'));
    return [...ordered.filter(usesShared), ...ordered.filter((t) => !usesShared(t))];
  }
}

module.exports = SharedFirstSequencer;
