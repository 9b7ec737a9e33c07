module.exports = {
  ...require('../jest.preset.js'),
  testEnvironment: '<rootDir>/jest-environment.js',
  globalTeardown: '<rootDir>/jest-global-teardown.js',
  testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
  testTimeout: 60_000,
};
