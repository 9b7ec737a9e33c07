import { CryptoError, EnvelopeCipher, MasterKeyring } from './envelope';

const k1 = MasterKeyring.generateKeyMaterial();
const k2 = MasterKeyring.generateKeyMaterial();

describe('EnvelopeCipher', () => {
  it('round-trips a value and never stores the plaintext', () => {
    const cipher = new EnvelopeCipher(new MasterKeyring(`1:${k1}`));
    const blob = cipher.encrypt('s3cr3t-client-secret', 'auth.integration:1:secrets');
    expect(blob).not.toContain('s3cr3t');
    expect(cipher.decrypt(blob, 'auth.integration:1:secrets')).toBe('s3cr3t-client-secret');
  });

  it('refuses a ciphertext copied to another row', () => {
    const cipher = new EnvelopeCipher(new MasterKeyring(`1:${k1}`));
    const blob = cipher.encrypt('value', 'auth.integration:1:secrets');
    expect(() => cipher.decrypt(blob, 'auth.integration:2:secrets')).toThrow(CryptoError);
  });

  it('refuses a tampered ciphertext', () => {
    const cipher = new EnvelopeCipher(new MasterKeyring(`1:${k1}`));
    const parts = cipher.encrypt('value', 'row').split('.');
    parts[6] = Buffer.from('other').toString('base64url');
    expect(() => cipher.decrypt(parts.join('.'), 'row')).toThrow(CryptoError);
  });

  it.each([
    ['data', 7],
    ['wrap', 4],
  ])('refuses a %s tag cut short (a 4-byte GCM tag could be forged)', (_which, index) => {
    const cipher = new EnvelopeCipher(new MasterKeyring(`1:${k1}`));
    const parts = cipher.encrypt('value', 'row').split('.');
    for (const length of [4, 8, 12, 15]) {
      const cut = [...parts];
      cut[index] = Buffer.from(parts[index]!, 'base64url').subarray(0, length).toString('base64url');
      expect(() => cipher.decrypt(cut.join('.'), 'row')).toThrow(CryptoError);
    }
    expect(cipher.decrypt(parts.join('.'), 'row')).toBe('value');
  });

  it('encrypts with the highest version and rewraps old rows after a rotation', () => {
    const before = new EnvelopeCipher(new MasterKeyring(`1:${k1}`));
    const old = before.encrypt('value', 'row');
    const after = new EnvelopeCipher(new MasterKeyring(`1:${k1},2:${k2}`));
    expect(after.versionOf(old)).toBe(1);
    expect(after.decrypt(old, 'row')).toBe('value');
    const rewrapped = after.rewrap(old, 'row');
    expect(after.versionOf(rewrapped)).toBe(2);
    // Once version 1 is retired, only the rewrapped row is readable.
    const retired = new EnvelopeCipher(new MasterKeyring(`2:${k2}`));
    expect(retired.decrypt(rewrapped, 'row')).toBe('value');
    expect(() => retired.decrypt(old, 'row')).toThrow(/version 1 is not configured/);
  });

  it('rejects malformed keyrings with a clear message', () => {
    expect(() => new MasterKeyring('')).toThrow(/no master key/);
    expect(() => new MasterKeyring('1:short')).toThrow(/32 bytes/);
    expect(() => new MasterKeyring(`1:${k1},1:${k2}`)).toThrow(/given twice/);
  });
});
