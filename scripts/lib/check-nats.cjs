// Exits 0 when the NATS server at argv[2] answers and has JetStream enabled (as NATS_USER/NATS_PASSWORD when set).
const { createRequire } = require('node:module');
const path = require('node:path');
const { connect } = createRequire(path.join(__dirname, '../../packages/messaging/package.json'))('nats');

(async () => {
  const { NATS_USER: user, NATS_PASSWORD: pass } = process.env;
  const nc = await connect({ servers: process.argv[2], timeout: 3000, ...(user ? { user, pass } : {}) });
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
