// Jest settings that give every worker of a run its own test lane (NATS server and database; see
// src/lanes.ts): `...require('@switchboard/testing/jest-lanes')` in a package's jest.config.js.
module.exports = {
  globalSetup: require.resolve('./jest-lanes-setup.js'),
  globalTeardown: require.resolve('./jest-lanes-teardown.js'),
};
