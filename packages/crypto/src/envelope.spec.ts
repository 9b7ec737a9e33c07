import { CryptoError, EnvelopeCipher, MasterKeyring, SHARED_HEADER_BYTES } from './envelope';

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

  describe('a data key shared by a batch', () => {
    it('seals each value for its own row, readable by any instance with the master key', () => {
      const writer = new EnvelopeCipher(new MasterKeyring(`1:${k1}`));
      const batch = writer.sharedKey();
      const a = batch.seal('{"n":1}', 'record:a');
      const b = batch.seal('{"n":2}', 'record:b');
      expect(a.startsWith('sb2.1.')).toBe(true);
      // One wrapped key for the batch, a nonce per value.
      expect(a.split('.').slice(0, 5)).toEqual(b.split('.').slice(0, 5));
      expect(a.split('.')[5]).not.toBe(b.split('.')[5]);
      const reader = new EnvelopeCipher(new MasterKeyring(`1:${k1}`));
      expect(reader.decrypt(a, 'record:a')).toBe('{"n":1}');
      expect(reader.decrypt(b, 'record:b')).toBe('{"n":2}');
      expect(writer.sharedKey().seal('x', 'r').split('.')[3]).not.toBe(a.split('.')[3]);
    });

    it('gives every value of a large batch its own nonce, and each opens', () => {
      const cipher = new EnvelopeCipher(new MasterKeyring(`1:${k1}`));
      const batch = cipher.sharedKey();
      // More values than one draw of nonces: values across the refill stay distinct and readable.
      const sealed = Array.from({ length: 1000 }, (_, i) => batch.seal(`{"n":${i}}`, `record:${i}`));
      expect(new Set(sealed.map((v) => v.split('.')[5])).size).toBe(1000);
      sealed.forEach((v, i) => expect(cipher.decrypt(v, `record:${i}`)).toBe(`{"n":${i}}`));
    });

    it('refuses a value copied to another row, tampered, or under another master key', () => {
      const cipher = new EnvelopeCipher(new MasterKeyring(`1:${k1}`));
      const blob = cipher.sharedKey().seal('value', 'record:a');
      expect(cipher.decrypt(blob, 'record:a')).toBe('value');
      // The shared key is now cached: the row binding and the tag are still checked.
      expect(() => cipher.decrypt(blob, 'record:b')).toThrow(CryptoError);
      const parts = blob.split('.');
      parts[6] = Buffer.from('other').toString('base64url');
      expect(() => cipher.decrypt(parts.join('.'), 'record:a')).toThrow(CryptoError);
      const wrapTampered = blob.split('.');
      wrapTampered[4] = Buffer.alloc(16).toString('base64url');
      expect(() => cipher.decrypt(wrapTampered.join('.'), 'record:a')).toThrow(CryptoError);
      expect(() => new EnvelopeCipher(new MasterKeyring(`1:${k2}`)).decrypt(blob, 'record:a')).toThrow(
        CryptoError,
      );
    });

    it('is rewrapped under a new master key, the values untouched', () => {
      const before = new EnvelopeCipher(new MasterKeyring(`1:${k1}`));
      const old = before.sharedKey().seal('value', 'record:a');
      const after = new EnvelopeCipher(new MasterKeyring(`1:${k1},2:${k2}`));
      const rewrapped = after.rewrap(old, 'record:a');
      expect(rewrapped.startsWith('sb2.2.')).toBe(true);
      expect(rewrapped.split('.').slice(5)).toEqual(old.split('.').slice(5));
      expect(new EnvelopeCipher(new MasterKeyring(`2:${k2}`)).decrypt(rewrapped, 'record:a')).toBe('value');
    });
  });

  describe('the binary form of a shared-key value', () => {
    /** Offsets of the layout (`SharedDataKey.sealBytes`): wrapped key, tag, ciphertext. */
    const WRAPPED_KEY = 17;
    const TAG = 77;
    const CIPHERTEXT = 93;

    it('round-trips, one wrapped key per batch, readable by any instance with the master key', () => {
      const writer = new EnvelopeCipher(new MasterKeyring(`1:${k1}`));
      const batch = writer.sharedKey();
      const a = batch.sealBytes('{"n":1}', 'record:a');
      const b = batch.sealBytes('{"n":2}', 'record:b');
      expect(a[0]).toBe(0x02);
      expect(a.length).toBe(CIPHERTEXT + '{"n":1}'.length);
      expect(a.subarray(0, 65)).toEqual(b.subarray(0, 65));
      expect(a.includes('{"n":1}')).toBe(false);
      const reader = new EnvelopeCipher(new MasterKeyring(`1:${k1}`));
      expect(reader.decryptBytes(a, 'record:a').toString()).toBe('{"n":1}');
      expect(reader.decrypt(b, 'record:b')).toBe('{"n":2}');
      expect(reader.versionOf(a)).toBe(1);
      // The text form of the same batch still opens beside it.
      expect(reader.decrypt(batch.seal('{"n":3}', 'record:c'), 'record:c')).toBe('{"n":3}');
    });

    it.each([
      ['ciphertext', CIPHERTEXT],
      ['tag', TAG + 3],
      ['wrapped key', WRAPPED_KEY + 5],
    ])('refuses a flipped byte in the %s', (_which, at) => {
      const cipher = new EnvelopeCipher(new MasterKeyring(`1:${k1}`));
      const blob = cipher.sharedKey().sealBytes('value', 'record:a');
      const tampered = Buffer.from(blob);
      tampered[at] = tampered[at]! ^ 0x01;
      expect(() =>
        new EnvelopeCipher(new MasterKeyring(`1:${k1}`)).decryptBytes(tampered, 'record:a'),
      ).toThrow(CryptoError);
      // Also with the batch's key already cached (only the wrapped key's bytes name it).
      expect(cipher.decryptBytes(blob, 'record:a').toString()).toBe('value');
      expect(() => cipher.decryptBytes(tampered, 'record:a')).toThrow(CryptoError);
    });

    it('refuses a value copied to another row, and a truncated value', () => {
      const cipher = new EnvelopeCipher(new MasterKeyring(`1:${k1}`));
      const blob = cipher.sharedKey().sealBytes('value', 'record:a');
      expect(() => cipher.decryptBytes(blob, 'record:b')).toThrow(CryptoError);
      for (const length of [0, 1, 5, 64, CIPHERTEXT - 1, blob.length - 1])
        expect(() => cipher.decryptBytes(blob.subarray(0, length), 'record:a')).toThrow(CryptoError);
      expect(() => cipher.versionOf(blob.subarray(0, 3))).toThrow(CryptoError);
    });

    it('reads a text envelope kept as its bytes', () => {
      const cipher = new EnvelopeCipher(new MasterKeyring(`1:${k1}`));
      const text = cipher.sharedKey().seal('value', 'record:a');
      expect(cipher.decrypt(Buffer.from(text), 'record:a')).toBe('value');
      expect(() => cipher.decrypt(Buffer.from('garbage'), 'record:a')).toThrow(CryptoError);
    });

    it('is rewrapped under a new master key, the value untouched and still binary', () => {
      const before = new EnvelopeCipher(new MasterKeyring(`1:${k1}`));
      const old = before.sharedKey().sealBytes('value', 'record:a');
      const after = new EnvelopeCipher(new MasterKeyring(`1:${k1},2:${k2}`));
      expect(after.versionOf(old)).toBe(1);
      const rewrapped = after.rewrap(old, 'record:a');
      expect(after.versionOf(rewrapped)).toBe(2);
      expect(rewrapped[0]).toBe(0x02);
      expect(rewrapped.subarray(65)).toEqual(old.subarray(65));
      expect(after.rewrap(rewrapped, 'record:a')).toBe(rewrapped);
      const retired = new EnvelopeCipher(new MasterKeyring(`2:${k2}`));
      expect(retired.decrypt(rewrapped, 'record:a')).toBe('value');
      expect(() => retired.decrypt(old, 'record:a')).toThrow(/version 1 is not configured/);
    });
  });

  describe('binary values of any size and text', () => {
    it('round-trip empty, non-ASCII and 100 KB values and long associated data, each with its own nonce', () => {
      const cipher = new EnvelopeCipher(new MasterKeyring(`1:${k1}`));
      const batch = cipher.sharedKey();
      const aads = ['record:1', `record:${'é'.repeat(2000)}`];
      for (const aad of aads)
        for (const value of ['', '{}', '{"name":"Zoë 日本 🎉"}', 'x'.repeat(100_000)]) {
          const blob = batch.sealBytes(value, aad);
          expect(blob.length).toBe(93 + Buffer.byteLength(value));
          if (value.length > 8) expect(blob.includes(value.slice(0, 8))).toBe(false);
          expect(cipher.decryptBytes(blob, aad).toString()).toBe(value);
          expect(() => cipher.decryptBytes(blob, aad.slice(0, -1))).toThrow(CryptoError);
        }
      const nonces = new Set(
        Array.from({ length: 200 }, () => batch.sealBytes('x', 'r').toString('hex', 65, 77)),
      );
      expect(nonces.size).toBe(200);
    });
  });

  describe('rewrapSharedHeader', () => {
    it('gives a batch one new header that opens each of its values under the new key alone', () => {
      const key = new EnvelopeCipher(new MasterKeyring(`1:${k1}`)).sharedKey();
      const a = key.sealBytes('value a', 'record:a');
      const b = key.sealBytes('value b', 'record:b');
      const header = a.subarray(0, SHARED_HEADER_BYTES);
      expect(b.subarray(0, SHARED_HEADER_BYTES)).toEqual(header);

      const rotating = new EnvelopeCipher(new MasterKeyring(`1:${k1},2:${k2}`));
      const next = rotating.rewrapSharedHeader(a);
      expect(next).toHaveLength(SHARED_HEADER_BYTES);
      expect(rotating.versionOf(Buffer.concat([next, a.subarray(SHARED_HEADER_BYTES)]))).toBe(2);
      // A fresh wrap each call: never the same nonce twice under one master key.
      expect(rotating.rewrapSharedHeader(header).subarray(5, 17)).not.toEqual(next.subarray(5, 17));

      const retired = new EnvelopeCipher(new MasterKeyring(`2:${k2}`));
      const swap = (blob: Buffer) => Buffer.concat([next, blob.subarray(SHARED_HEADER_BYTES)]);
      expect(retired.decrypt(swap(a), 'record:a')).toBe('value a');
      expect(retired.decrypt(swap(b), 'record:b')).toBe('value b');
      expect(() => retired.decrypt(swap(a), 'record:b')).toThrow(CryptoError);
    });

    it('refuses a header it cannot open: another key, tampered, truncated or not binary', () => {
      const blob = new EnvelopeCipher(new MasterKeyring(`1:${k1}`)).sharedKey().sealBytes('v', 'record:a');
      const other = new EnvelopeCipher(new MasterKeyring(`1:${k2},2:${k1}`));
      expect(() => other.rewrapSharedHeader(blob)).toThrow(CryptoError);
      const rotating = new EnvelopeCipher(new MasterKeyring(`1:${k1},2:${k2}`));
      const tampered = Buffer.from(blob);
      tampered[20] = tampered[20]! ^ 1;
      expect(() => rotating.rewrapSharedHeader(tampered)).toThrow(CryptoError);
      expect(() => rotating.rewrapSharedHeader(blob.subarray(0, SHARED_HEADER_BYTES - 1))).toThrow(
        CryptoError,
      );
      const text = new EnvelopeCipher(new MasterKeyring(`1:${k1}`)).sharedKey().seal('v', 'record:a');
      expect(() => rotating.rewrapSharedHeader(Buffer.from(text))).toThrow(CryptoError);
    });
  });

  it('rejects malformed keyrings with a clear message', () => {
    expect(() => new MasterKeyring('')).toThrow(/no master key/);
    expect(() => new MasterKeyring('1:short')).toThrow(/32 bytes/);
    expect(() => new MasterKeyring(`1:${k1},1:${k2}`)).toThrow(/given twice/);
  });
});
