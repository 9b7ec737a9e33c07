// Stops the stacks the files shared (in this process when the run was --runInBand; worker processes stop
// theirs as they exit), then closes the run's test lanes.
const lanes = require('@switchboard/testing/jest-lanes');

module.exports = async (globalConfig, projectConfig) => {
  await require('@switchboard/testing').stopSharedStacks();
  await require(lanes.globalTeardown)(globalConfig, projectConfig);
};
