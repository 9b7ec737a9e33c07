import type { ClientCertificate } from '@switchboard/egress';
import type { ResolvedProvider } from '@switchboard/providers';
import { AuthConnectError } from '../auth-connect.errors';

const CERTIFICATE = /^-----BEGIN CERTIFICATE-----[\s\S]+-----END CERTIFICATE-----$/;
const PRIVATE_KEY = /^-----BEGIN (?:RSA |EC )?PRIVATE KEY-----[\s\S]+-----END (?:RSA |EC )?PRIVATE KEY-----$/;

/**
 * The client certificate a `mutual_tls` provider (ADP) requires, from what the end user sent or what is
 * stored with the connection; undefined for every other provider. Literal `\n`s (a one-line paste) are
 * turned back into line breaks. Missing or malformed PEM is a 400, before anything is sent.
 */
export function clientCertificateFor(
  provider: Pick<ResolvedProvider, 'mutual_tls' | 'display_name'>,
  source: { client_certificate?: unknown; client_private_key?: unknown },
): ClientCertificate | undefined {
  if (!provider.mutual_tls) return undefined;
  const pem = (value: unknown) => (typeof value === 'string' ? value.replace(/\\n/g, '\n').trim() : '');
  const cert = pem(source.client_certificate);
  const key = pem(source.client_private_key);
  const problems: string[] = [];
  if (!CERTIFICATE.test(cert)) problems.push('client_certificate must be a PEM certificate');
  if (!PRIVATE_KEY.test(key)) problems.push('client_private_key must be a PEM private key');
  if (problems.length > 0)
    throw new AuthConnectError(
      'invalid_body',
      `${provider.display_name} needs mutual TLS: ${problems.join('; ')}`,
    );
  return { cert, key };
}
