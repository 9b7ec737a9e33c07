import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';

/**
 * Fake providers on loopback for the OAuth spellings, AWS SigV4 and mutual TLS: one HTTPS server whose
 * certificate comes from a throwaway CA made with openssl (give the stack `NODE_EXTRA_CA_CERTS: caFile`),
 * plus a client certificate from the same CA for the mTLS provider.
 */

export interface Pki {
  dir: string;
  caFile: string;
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

function openssl(args: string[]): void {
  const result = spawnSync('openssl', args, { encoding: 'utf8' });
  if (result.status !== 0)
    throw new Error(`openssl ${args[0]} failed: ${result.error?.message ?? result.stderr}`);
}

/** A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by the CA. */
export function makePki(): Pki {
  const dir = mkdtempSync(join(tmpdir(), 'fake-pki-'));
  const file = (name: string) => join(dir, name);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl([
    'req',
    '-x509',
    ...ec,
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.pem'),
    '-days',
    '2',
    '-subj',
    '/CN=Fake Provider CA',
  ]);
  const issue = (name: string, subject: string, extensions: string) => {
    openssl(['req', ...ec, '-keyout', file(`${name}.key`), '-out', file(`${name}.csr`), '-subj', subject]);
    writeFileSync(file(`${name}.ext`), extensions);
    openssl([
      'x509',
      '-req',
      '-in',
      file(`${name}.csr`),
      '-CA',
      file('ca.pem'),
      '-CAkey',
      file('ca.key'),
      '-CAcreateserial',
      '-out',
      file(`${name}.pem`),
      '-days',
      '2',
      '-extfile',
      file(`${name}.ext`),
    ]);
  };
  issue('server', '/CN=127.0.0.1', 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  issue('client', '/CN=switchboard-test-client', 'extendedKeyUsage=clientAuth\n');
  // PKCS#8 (`BEGIN PRIVATE KEY`), the form providers hand out.
  openssl(['pkcs8', '-topk8', '-nocrypt', '-in', file('client.key'), '-out', file('client.p8')]);
  const read = (name: string) => readFileSync(file(name), 'utf8');
  return {
    dir,
    caFile: file('ca.pem'),
    ca: read('ca.pem'),
    serverCert: read('server.pem'),
    serverKey: read('server.key'),
    clientCert: read('client.pem'),
    clientKey: read('client.p8'),
  };
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
  /** Whether the TLS client presented a certificate the CA vouches for. */
  clientCertificate: boolean;
}

export type Handler = (
  req: RecordedRequest,
) => { status: number; body: unknown; headers?: Record<string, string> } | undefined;

export interface FakeHttpsProvider {
  url: string;
  requests: RecordedRequest[];
  stop(): Promise<void>;
}

/**
 * An HTTPS server on loopback answering with `handler` (404 when it returns nothing). With
 * `requireClientCertificate`, a TLS handshake without a certificate from the CA is refused.
 */
export async function startFakeHttpsProvider(
  pki: Pki,
  handler: Handler,
  options: { requireClientCertificate?: boolean } = {},
): Promise<FakeHttpsProvider> {
  const requests: RecordedRequest[] = [];
  const requireCert = options.requireClientCertificate ?? false;
  const server: Server = createServer(
    {
      cert: pki.serverCert,
      key: pki.serverKey,
      ca: pki.ca,
      requestCert: requireCert,
      rejectUnauthorized: requireCert,
    },
    (req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const recorded: RecordedRequest = {
          method: req.method ?? 'GET',
          path: req.url ?? '/',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          clientCertificate: (req.socket as TLSSocket).authorized === true,
        };
        requests.push(recorded);
        const answer = handler(recorded) ?? { status: 404, body: { error: 'not_found' } };
        res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
        res.end(JSON.stringify(answer.body));
      });
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    requests,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export function removePki(pki: Pki): void {
  rmSync(pki.dir, { recursive: true, force: true });
}
