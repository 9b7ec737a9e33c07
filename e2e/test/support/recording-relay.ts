import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RelayedRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: Buffer;
  /** Where the relay sent it (undefined when held back). */
  target?: string;
}

export interface RecordingRelay {
  url: string;
  /** Where requests go, each to the next in turn (set when the targets are known). */
  targets: string[];
  /** Pass requests on (else answer 502 itself, keeping them unspent). */
  forward: boolean;
  /** Each request as it was sent to the relay. */
  captured: RelayedRequest[];
  close(): Promise<void>;
}

/**
 * An HTTP hop on loopback that records every request as sent and passes it to its targets in turn,
 * streaming the answer back: what a load balancer, or a network neighbour on that hop, could see.
 */
export async function startRecordingRelay(targets: string[] = []): Promise<RecordingRelay> {
  let next = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers))
        if (typeof value === 'string' && !['host', 'connection', 'keep-alive'].includes(name))
          headers[name] = value;
      const captured: RelayedRequest = {
        method: req.method ?? 'GET',
        url: req.url ?? '/',
        headers,
        body: Buffer.concat(chunks),
      };
      relay.captured.push(captured);
      if (!relay.forward) {
        res.writeHead(502).end();
        return;
      }
      const target = relay.targets[next++ % relay.targets.length]!;
      captured.target = target;
      const upstream = request(
        `${target}${captured.url}`,
        { method: captured.method, headers: captured.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
          answer.on('error', () => res.destroy());
        },
      );
      upstream.on('error', () => (res.headersSent ? res.destroy() : res.writeHead(502).end()));
      res.on('close', () => upstream.destroy());
      upstream.end(captured.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const relay: RecordingRelay = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    targets,
    forward: true,
    captured: [],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return relay;
}
