module.exports = {
  ...require('../../jest.preset.js'),
  testMatch: [
    '<rootDir>/src/**/*.spec.ts',
    '<rootDir>/src/**/*.int-spec.ts',
    '<rootDir>/test/**/*.e2e-spec.ts',
  ],
};
