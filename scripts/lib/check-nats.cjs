// Exits 0 when the NATS server at argv[2] answers and has JetStream enabled.
const { createRequire } = require('node:module');
const path = require('node:path');
const { connect } = createRequire(path.join(__dirname, '../../packages/messaging/package.json'))('nats');

(async () => {
  const nc = await connect({ servers: process.argv[2], timeout: 3000 });
  try {
    await (await nc.jetstreamManager()).getAccountInfo();
  } finally {
    await nc.close();
  }
})().then(
  () => process.exit(0),
  (error) => {
    console.error(`NATS check failed: ${error.message}`);
    process.exit(1);
  },
);
