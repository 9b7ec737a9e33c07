// Opens one lane per jest worker before the workers start; they inherit the lanes through the environment.
const { openTestLanes, TEST_LANES_VARIABLE } = require('./dist/lanes');

module.exports = async (globalConfig) => {
  const opened = await openTestLanes(globalConfig.maxWorkers);
  if (opened.lanes.length === 0) return;
  process.env[TEST_LANES_VARIABLE] = JSON.stringify(opened.lanes);
  globalThis[Symbol.for('switchboard.testing.lanes')] = opened;
};
