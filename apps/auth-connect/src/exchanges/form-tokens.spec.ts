import { createHash, createPublicKey, generateKeyPairSync } from 'node:crypto';
import type { ResolvedProvider } from '@switchboard/providers';
import { AuthConnectError } from '../auth-connect.errors';
import { credentialFieldsOf, fillFieldTemplate, normalizePem } from './form-tokens';

describe('token-mode templates', () => {
  const fields = { key: '0123abcd:s3cr3t', user: 'robot', account: 'myorg-acct1', pw: 'p@ss' };

  it('fills credentials, connection config, upper() and the halves of an id:secret key', () => {
    expect(fillFieldTemplate('${upper(credentials.account)}.${upper(credentials.user)}', fields, {})).toBe(
      'MYORG-ACCT1.ROBOT',
    );
    expect(fillFieldTemplate('${credentials.key.id}/${credentials.key.secret}', fields, {})).toBe(
      '0123abcd/s3cr3t',
    );
    expect(fillFieldTemplate('https://${connectionConfig.host}/x', fields, { host: 'a.example' })).toBe(
      'https://a.example/x',
    );
  });

  it('builds a Basic pair with base64(a:b) and a date n days ahead with dateInDays(n)', () => {
    expect(fillFieldTemplate('Basic ${base64(credentials.user:credentials.pw)}', fields, {})).toBe(
      `Basic ${Buffer.from('robot:p@ss').toString('base64')}`,
    );
    expect(fillFieldTemplate('${dateInDays(7)}', fields, {})).toBe(
      new Date(Date.now() + 7 * 86_400_000).toISOString().slice(0, 10),
    );
  });

  it('base64(...) over a template of its own: tenant+id:secret, values never read as templates', () => {
    const template = 'x ${base64(${connectionConfig.tenant}+${credentials.user}:${credentials.pw})} y';
    expect(fillFieldTemplate(template, fields, { tenant: 'acme' })).toBe(
      `x ${Buffer.from('acme+robot:p@ss').toString('base64')} y`,
    );
    expect(fillFieldTemplate(template, { ...fields, pw: '${credentials.user})}' }, { tenant: 'a' })).toBe(
      `x ${Buffer.from('a+robot:${credentials.user})}').toString('base64')} y`,
    );
    expect(fillFieldTemplate(template, fields, {})).toBeUndefined();
  });

  it('is undefined when a value is missing, rather than sending an empty one', () => {
    expect(fillFieldTemplate('${credentials.nope}', fields, {})).toBeUndefined();
    expect(fillFieldTemplate('${base64(credentials.user:credentials.nope)}', fields, {})).toBeUndefined();
  });

  it('fingerprint() is SHA256: and the base64 SHA-256 of the DER public key, from a one-line PEM too', () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      publicKeyEncoding: { type: 'spki', format: 'der' },
    });
    const expected = `SHA256:${createHash('sha256').update(publicKey).digest('base64')}`;
    const oneLine = privateKey.replace(/\n/g, ' ');
    expect(fillFieldTemplate('${fingerprint(credentials.k)}', { k: oneLine }, {})).toBe(expected);
    expect(() => createPublicKey(normalizePem(oneLine))).not.toThrow();
  });
});

describe('credentialFieldsOf', () => {
  const provider = {
    name: 'p',
    display_name: 'P',
    credentials: {
      apiKey: { type: 'string', title: 'API key', pattern: '^[a-z0-9]+$' },
      region: { type: 'string', title: 'Region', optional: true },
      assertion: { type: 'string', title: 'x', automated: true },
    },
  } as unknown as ResolvedProvider;

  it('takes exactly the declared fields, ignoring a type', () => {
    expect(credentialFieldsOf(provider, { type: 'TWO_STEP', apiKey: 'abc123' })).toEqual({
      apiKey: 'abc123',
    });
  });

  it('refuses a missing, malformed or undeclared field, without echoing values', () => {
    const problem = (body: Record<string, string>) => {
      try {
        credentialFieldsOf(provider, body);
      } catch (error) {
        expect(error).toBeInstanceOf(AuthConnectError);
        return (error as AuthConnectError).message;
      }
      throw new Error('expected a refusal');
    };
    expect(problem({})).toBe('apiKey is required');
    expect(problem({ apiKey: 'NOT-VALID-SECRET' })).not.toContain('NOT-VALID-SECRET');
    expect(problem({ apiKey: 'abc', token: 'x' })).toContain('"token" is not a credential of P');
    // An automated field is Switchboard's to fill, never the end user's.
    expect(problem({ apiKey: 'abc', assertion: 'x' })).toContain('"assertion" is not a credential of P');
  });
});
