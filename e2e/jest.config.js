module.exports = {
  ...require('../jest.preset.js'),
  testEnvironment: '<rootDir>/jest-environment.js',
  globalTeardown: '<rootDir>/jest-global-teardown.js',
  testSequencer: '<rootDir>/jest-sequencer.js',
  testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
  testTimeout: 60_000,
};
