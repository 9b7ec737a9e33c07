module.exports = {
  ...require('../jest.preset.js'),
  testEnvironment: '<rootDir>/jest-environment.js',
  // Each worker gets a NATS server and a database of its own (packages/testing/src/lanes.ts).
  globalSetup: require('@switchboard/testing/jest-lanes').globalSetup,
  globalTeardown: '<rootDir>/jest-global-teardown.js',
  testSequencer: '<rootDir>/jest-sequencer.js',
  testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
  testTimeout: 60_000,
};
