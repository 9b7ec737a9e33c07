module.exports = {
  ...require('../../jest.preset.js'),
  // Each worker gets a NATS server and a database of its own (packages/testing/src/lanes.ts).
  ...require('@switchboard/testing/jest-lanes'),
  testMatch: [
    '<rootDir>/src/**/*.spec.ts',
    '<rootDir>/src/**/*.int-spec.ts',
    '<rootDir>/test/**/*.e2e-spec.ts',
  ],
};
