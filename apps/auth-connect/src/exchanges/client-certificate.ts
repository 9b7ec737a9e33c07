import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';
import type { ClientCertificate } from '@switchboard/egress';
import type { ResolvedProvider } from '@switchboard/providers';
import { AuthConnectError } from '../auth-connect.errors';
import { normalizePem } from './form-tokens';

const CERTIFICATE = /^-----BEGIN CERTIFICATE-----[\s\S]+-----END CERTIFICATE-----\n?$/;
const PRIVATE_KEY =
  /^-----BEGIN (?:RSA |EC )?PRIVATE KEY-----[\s\S]+-----END (?:RSA |EC )?PRIVATE KEY-----\n?$/;

/**
 * The client certificate a `mutual_tls` provider (ADP) requires, from what the end user sent or what is
 * stored with the connection; undefined for every other provider. A one-line paste (the connect page's
 * password fields drop line breaks, or literal `\n`s) is put back into PEM lines. Each is parsed, and the
 * key must belong to the certificate: a bad pair is a 400 naming the field, before anything is sent, and
 * the message never quotes what was typed.
 */
export function clientCertificateFor(
  provider: Pick<ResolvedProvider, 'mutual_tls' | 'display_name'>,
  source: { client_certificate?: unknown; client_private_key?: unknown },
): ClientCertificate | undefined {
  if (!provider.mutual_tls) return undefined;
  const pem = (value: unknown) => (typeof value === 'string' ? normalizePem(value) : '');
  const cert = pem(source.client_certificate);
  const key = pem(source.client_private_key);
  const problems: string[] = [];
  let certificate: X509Certificate | undefined;
  let privateKey: KeyObject | undefined;
  if (!CERTIFICATE.test(cert)) problems.push('client_certificate must be a PEM certificate');
  else {
    try {
      certificate = new X509Certificate(cert);
    } catch {
      problems.push('client_certificate is not a readable X.509 certificate');
    }
  }
  if (!PRIVATE_KEY.test(key)) problems.push('client_private_key must be a PEM private key');
  else {
    try {
      privateKey = createPrivateKey(key);
    } catch {
      problems.push('client_private_key is not a readable private key');
    }
  }
  if (certificate && privateKey && !certificate.checkPrivateKey(privateKey))
    problems.push('client_private_key does not belong to client_certificate');
  if (problems.length > 0)
    throw new AuthConnectError(
      'invalid_body',
      `${provider.display_name} needs mutual TLS: ${problems.join('; ')}`,
    );
  return { cert, key };
}
