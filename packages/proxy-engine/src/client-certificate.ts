import type { ClientCertificate } from '@switchboard/egress';
import { ProxyError } from './proxy.errors';

const PEM = /-----BEGIN [A-Z0-9 ]+-----[\s\S]+-----END [A-Z0-9 ]+-----/;

/**
 * For a provider with `mutual_tls`, the certificate and private key stored with the connection's
 * credentials; undefined for every other provider. A connection without them cannot be proxied.
 */
export function clientCertificateOf(
  provider: { mutual_tls?: boolean | undefined },
  credentials: Record<string, unknown>,
): ClientCertificate | undefined {
  if (!provider.mutual_tls) return undefined;
  const cert = credentials.client_certificate;
  const key = credentials.client_private_key;
  if (typeof cert !== 'string' || typeof key !== 'string' || !PEM.test(cert) || !PEM.test(key))
    throw new ProxyError(
      'invalid_connection',
      'This provider needs mutual TLS: the connection must hold a PEM client_certificate and client_private_key',
    );
  return { cert: cert.replace(/\\n/g, '\n'), key: key.replace(/\\n/g, '\n') };
}
