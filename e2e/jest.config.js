module.exports = {
  ...require('../jest.preset.js'),
  testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
  testTimeout: 60_000,
};
