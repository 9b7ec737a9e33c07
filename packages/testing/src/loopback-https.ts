import { readFileSync, rmSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { makeLoopbackCertificate } from './certificate';

export interface LoopbackHttpsServer {
  /** `https://127.0.0.1:<port>`. */
  url: string;
  /** The certificate to trust (`NODE_EXTRA_CA_CERTS`). */
  caFile: string;
  /** A GET as a browser would send it, following no redirect: the status and the redirect's target. */
  get(target: URL | string): Promise<{ status: number; location: string | undefined }>;
  /** Closes the server and its open connections, and removes the certificate. */
  stop(): Promise<void>;
}

/**
 * A fake provider served over HTTPS on a loopback port with a throwaway certificate of its own
 * (`makeLoopbackCertificate`). A handler that throws answers 500 `{"error":"server_error"}`.
 */
export async function serveLoopbackHttps(
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<unknown>,
  prefix?: string,
): Promise<LoopbackHttpsServer> {
  const { dir, keyFile, certFile } = makeLoopbackCertificate(prefix);
  const ca = readFileSync(certFile);
  const server = createServer({ key: readFileSync(keyFile), cert: ca }, (req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'server_error' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    caFile: certFile,
    get: (target) =>
      new Promise((resolve, reject) => {
        const req = httpsRequest(target, { method: 'GET', ca }, (res) => {
          res.resume();
          resolve({ status: res.statusCode ?? 0, location: res.headers.location });
        });
        req.on('error', reject);
        req.end();
      }),
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
