import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface TcpForwarder {
  /** The loopback port services are pointed at instead of the real one. */
  port: number;
  /** Connections made through it so far. */
  readonly connections: number;
  /** A dependency gone away: every connection through it is destroyed and new ones are refused. */
  cut(): Promise<void>;
  /** Back: it accepts and forwards on the same port again. */
  resume(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A TCP forwarder on 127.0.0.1 in front of a dependency on 127.0.0.1 (Postgres, NATS): what a network
 * between a service and it does, including failing. `cut()` destroys both sides of every connection and
 * closes the listening socket (connects are refused), `resume()` listens on the same port again.
 */
export async function startTcpForwarder(targetPort: number): Promise<TcpForwarder> {
  const sockets = new Set<Socket>();
  let connections = 0;
  const onConnection = (client: Socket) => {
    connections++;
    const upstream = connect({ host: '127.0.0.1', port: targetPort });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  };
  let server: Server = createServer(onConnection);
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
    });
  const port = await listen(0);
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      sockets.clear();
      if (!server.listening) return resolve();
      server.close(() => resolve());
    });
  return {
    port,
    get connections() {
      return connections;
    },
    cut: stop,
    async resume() {
      server = createServer(onConnection);
      await listen(port);
    },
    close: stop,
  };
}
