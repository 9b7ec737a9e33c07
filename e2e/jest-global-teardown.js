// Stops the stacks the files shared (with --runInBand they ran in this process).
module.exports = async () => {
  await require('@switchboard/testing').stopSharedStacks();
};
