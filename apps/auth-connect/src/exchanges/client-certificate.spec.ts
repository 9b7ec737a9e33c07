import { makeLoopbackCertificatePem } from '@switchboard/testing';
import { AuthConnectError } from '../auth-connect.errors';
import { clientCertificateFor } from './client-certificate';

const adp = { mutual_tls: true, display_name: 'ADP' };

function messageOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(AuthConnectError);
    expect((error as AuthConnectError).code).toBe('invalid_body');
    return (error as Error).message;
  }
  throw new Error('expected an error');
}

describe('clientCertificateFor', () => {
  const pair = makeLoopbackCertificatePem();
  const other = makeLoopbackCertificatePem();

  it('asks nothing of a provider without mutual TLS', () => {
    expect(clientCertificateFor({ display_name: 'Acme' }, {})).toBeUndefined();
  });

  it('takes a PEM pair as pasted into one-line fields, and gives it back in PEM lines', () => {
    const oneLine = (pem: string) => pem.replace(/\n/g, ' ');
    const got = clientCertificateFor(adp, {
      client_certificate: oneLine(pair.cert),
      client_private_key: oneLine(pair.key),
    });
    expect(got).toEqual({ cert: pair.cert, key: pair.key });
  });

  it('refuses what is not a certificate and key, or a key of another certificate, without quoting them', () => {
    expect(messageOf(() => clientCertificateFor(adp, {}))).toBe(
      'ADP needs mutual TLS: client_certificate must be a PEM certificate; client_private_key must be a PEM private key',
    );
    const garbled = '-----BEGIN CERTIFICATE-----\nTm90QUNlcnRpZmljYXRl\n-----END CERTIFICATE-----';
    const garbledKey = '-----BEGIN PRIVATE KEY-----\nU2VjcmV0S2V5VmFsdWU=\n-----END PRIVATE KEY-----';
    const unreadable = messageOf(() =>
      clientCertificateFor(adp, { client_certificate: garbled, client_private_key: garbledKey }),
    );
    expect(unreadable).toBe(
      'ADP needs mutual TLS: client_certificate is not a readable X.509 certificate; client_private_key is not a readable private key',
    );
    expect(
      messageOf(() =>
        clientCertificateFor(adp, { client_certificate: pair.cert, client_private_key: other.key }),
      ),
    ).toBe('ADP needs mutual TLS: client_private_key does not belong to client_certificate');
  });
});
