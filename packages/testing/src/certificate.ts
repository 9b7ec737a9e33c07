import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A throwaway self-signed certificate for 127.0.0.1 (EC P-256, two days), made by the openssl CLI in a
 * directory of its own: the fake providers serve HTTPS with it, and a service trusts it through
 * `NODE_EXTRA_CA_CERTS: certFile`. `dir` is the caller's to remove when it is done with the files.
 */
export function makeLoopbackCertificate(prefix = 'loopback-cert-'): {
  dir: string;
  keyFile: string;
  certFile: string;
} {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const keyFile = join(dir, 'key.pem');
  const certFile = join(dir, 'cert.pem');
  const openssl = spawnSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '2',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { encoding: 'utf8' },
  );
  if (openssl.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`openssl could not make a test certificate: ${openssl.error?.message ?? openssl.stderr}`);
  }
  return { dir, keyFile, certFile };
}

/** The same certificate as PEM text, its key beside it, with nothing left on disk. */
export function makeLoopbackCertificatePem(): { cert: string; key: string } {
  const { dir, keyFile, certFile } = makeLoopbackCertificate();
  try {
    return { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
