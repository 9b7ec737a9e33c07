import { join } from 'node:path';

/** The AES-256-GCM addon (native/aead.c): one OpenSSL context per key, one call per value. */
export interface NativeAead {
  /** A decryption context holding `key` (32 bytes) and its key schedule. */
  keyContext(key: Buffer): object;
  /** An encryption context holding `key` (32 bytes). */
  sealContext(key: Buffer): object;
  /**
   * Encrypts `buffer[dataAt, dataEnd)` in place with the nonce at `nonceAt` and writes the tag at `tagAt`
   * (the three ranges inside `buffer`, apart).
   */
  seal(
    context: object,
    buffer: Buffer,
    nonceAt: number,
    tagAt: number,
    dataAt: number,
    dataEnd: number,
    aad: string,
  ): void;
  /**
   * Decrypts `source[ciphertextAt, ciphertextEnd)` with the nonce at `nonceAt` and the tag at `tagAt` into
   * the start of `out`: the plaintext's length, or -1 when the tag does not match.
   */
  open(
    context: object,
    source: Buffer,
    nonceAt: number,
    tagAt: number,
    ciphertextAt: number,
    ciphertextEnd: number,
    aad: string,
    out: Buffer,
  ): number;
}

/** Associated data the addon takes (its buffer holds 1024 bytes); longer goes through Node's cipher. */
export const NATIVE_AAD_CHARACTERS = 300;

/**
 * The addon, built with this package (`native/build.cjs` puts it in dist/native), or undefined where it is
 * not there (a build without a compiler): Node's ciphers then do the same work, slower.
 */
function loadNativeAead(): NativeAead | undefined {
  // dist/native-aead.js → dist/native; src/native-aead.ts (tests) → dist/native.
  for (const path of [
    join(__dirname, 'native', 'aead.node'),
    join(__dirname, '..', 'dist', 'native', 'aead.node'),
  ]) {
    try {
      return require(path) as NativeAead;
    } catch {
      // Not at this path.
    }
  }
  return undefined;
}

export const nativeAead: NativeAead | undefined = loadNativeAead();
