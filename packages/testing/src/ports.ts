import { readFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { randomInt } from 'node:crypto';

/**
 * The first port of the OS's ephemeral range, which it also draws from for outgoing connections: a port
 * picked there (as `listen(0)` does) can be taken by one of the stack's own connections to Postgres or
 * NATS before the service that was given it binds it.
 */
function ephemeralRangeStart(): number {
  try {
    const first = Number(
      readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0],
    );
    return Number.isInteger(first) ? first : 32_768;
  } catch {
    return 32_768;
  }
}

const BELOW = ephemeralRangeStart();
const FROM = 20_000;

function listenOnce(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : undefined));
    });
  });
}

/**
 * A TCP port free on loopback right now: a random one below the ephemeral range (no outgoing connection
 * takes it meanwhile), or the OS's pick where that range starts too low to leave room.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; BELOW - FROM > 1_000 && attempt < 50; attempt++) {
    const port = await listenOnce(FROM + randomInt(BELOW - FROM));
    if (port !== undefined) return port;
  }
  const port = await listenOnce(0);
  if (port === undefined) throw new Error('no free port on 127.0.0.1');
  return port;
}

/** Whether something accepts TCP connections on this loopback port now. */
export function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
