import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedWebhook {
  path: string;
  headers: IncomingHttpHeaders;
  /** The exact body text, as a receiver verifying signatures must use it. */
  body: string;
  receivedAt: number;
}

export type ReceiverMode =
  | { kind: 'ok' }
  | { kind: 'status'; status: number; headers?: Record<string, string> }
  | { kind: 'slow'; delayMs: number };

/**
 * A customer's webhook endpoint on loopback. It records every request, answers as told (200, a status,
 * slowly) and can be taken down (connection refused) and brought back on the same port.
 */
export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  mode: ReceiverMode = { kind: 'ok' };
  /** Per path, the answers to give in order (then 200): e.g. `[503, 503]` fails twice. */
  readonly script = new Map<string, { status: number; headers?: Record<string, string> }[]>();
  /** Requests being answered right now (slow mode): a sender killed now leaves them unanswered. */
  inFlight = 0;
  private server: Server | undefined;
  private port = 0;

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(port = 0): Promise<this> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const scripted = this.script.get(req.url ?? '/')?.shift();
        const mode: ReceiverMode = scripted ? { kind: 'status', ...scripted } : this.mode;
        const record = () =>
          this.received.push({
            path: req.url ?? '/',
            headers: req.headers,
            body: Buffer.concat(chunks).toString('utf8'),
            receivedAt: Date.now(),
          });
        if (mode.kind === 'status') {
          record();
          res.writeHead(mode.status, mode.headers).end();
        } else if (mode.kind === 'slow') {
          this.inFlight++;
          setTimeout(() => {
            this.inFlight--;
            record();
            res.writeHead(200).end('ok');
          }, mode.delayMs);
        } else {
          record();
          res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
        }
      });
    });
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
    return this;
  }

  /** Down: the port refuses connections until `start(sameport)`. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  async restart(): Promise<void> {
    await this.start(this.port);
  }

  /** Received bodies parsed, for one path. */
  on(path: string): ReceivedWebhook[] {
    return this.received.filter((r) => r.path === path);
  }

  async waitFor(count: number, path?: string, timeoutMs = 15_000): Promise<ReceivedWebhook[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const got = path ? this.on(path) : this.received;
      if (got.length >= count) return got;
      if (Date.now() > deadline)
        throw new Error(`expected ${count} webhooks${path ? ` on ${path}` : ''}, got ${got.length}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }
}

/** Plain object of the headers a receiver got (Node lower-cases names), for signature checks. */
export function headerRecord(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (typeof v === 'string') out[k] = v;
  return out;
}
