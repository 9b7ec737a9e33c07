// The e2e files' environment: Node's, plus the jest worker's shared stacks (`startStack({ shared: true })`),
// which outlive each file's module registry (see packages/testing/src/shared-stacks.ts).
const { TestEnvironment } = require('jest-environment-node');
const { sharedStacks, SHARED_STACKS_KEY } = require('@switchboard/testing');

class E2eEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    this.global[SHARED_STACKS_KEY] = sharedStacks();
  }
}

module.exports = E2eEnvironment;
