// Stops the run's lane NATS servers and drops their databases.
module.exports = async () => {
  const key = Symbol.for('switchboard.testing.lanes');
  await globalThis[key]?.close();
  delete globalThis[key];
};
