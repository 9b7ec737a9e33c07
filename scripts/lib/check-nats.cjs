// Exits 0 when the NATS server at argv[2] answers and has JetStream enabled. With NATS_USER/NATS_PASSWORD
// set, it connects as that user and also requires the server to refuse a client without credentials.
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
  if (!user) return;
  const anonymous = await connect({ servers: process.argv[2], timeout: 3000 }).catch((error) => {
    if (error.code === 'AUTHORIZATION_VIOLATION') return undefined;
    throw error;
  });
  if (anonymous) {
    await anonymous.close();
    throw new Error('it lets clients in without credentials (not the server of infra/nats/nats.conf)');
  }
})().then(
  () => process.exit(0),
  (error) => {
    console.error(`NATS check failed: ${error.message}`);
    process.exit(1);
  },
);
