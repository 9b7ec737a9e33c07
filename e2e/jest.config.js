module.exports = {
  ...require('../jest.preset.js'),
  testEnvironment: '<rootDir>/jest-environment.js',
  // Each worker gets a NATS server and a database of its own (packages/testing/src/lanes.ts).
  globalSetup: require('@switchboard/testing/jest-lanes').globalSetup,
  globalTeardown: '<rootDir>/jest-global-teardown.js',
  testSequencer: '<rootDir>/jest-sequencer.js',
  testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
  // Tests and hooks boot stacks and wait on them while other workers do the same on two cores; a stack's
  // own readiness deadline (TEST_STACK_READY_TIMEOUT_MS, 120 s under npm test) comes first.
  testTimeout: 150_000,
};
