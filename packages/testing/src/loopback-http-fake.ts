import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A fake provider served over HTTP on a loopback port: `start` listens (its `url` is known from then on),
 * `stop` closes the server and its open connections. Subclasses answer requests in `handle`.
 */
export abstract class LoopbackHttpFake {
  url = '';
  private server?: Server;

  async start(host = '127.0.0.1'): Promise<void> {
    const server = createServer((req, res) => void this.handle(req, res));
    this.server = server;
    await new Promise<void>((resolve) => server.listen(0, host, resolve));
    this.url = `http://${host}:${(server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }

  protected abstract handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
}

/** A request's whole body as text. */
export async function requestBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
