import { createHash, createHmac, createSign, getHashes, randomBytes, randomUUID } from 'node:crypto';

/**
 * The synchronous half of a script's `crypto` module (prelude/crypto.ts): hashes, HMACs, signatures and random
 * bytes computed by Node's own crypto, so that results equal Node's byte for byte. The isolate calls it with
 * `applySync` and copies of its bytes (Uint8Arrays); it answers with a copy of the result. Nothing of the
 * host is handed in: no key objects, no streams, only bytes and strings.
 */

/**
 * Most bytes one digest hashes or signs. The host computes it on the main thread, outside the isolate's CPU
 * clock (only the wall clock counts it): 16 MiB is tens of milliseconds of SHA-256, a pause other runs on
 * this process can take.
 */
export const MAX_CRYPTO_INPUT_BYTES = 16 * 1024 * 1024;
/** Most random bytes per call (Node's getRandomValues allows 65536; randomBytes is asked for more). */
export const MAX_RANDOM_BYTES = 1024 * 1024;

const hashes = new Set(getHashes().map((h) => h.toLowerCase()));

function algorithm(value: unknown): string {
  if (typeof value !== 'string' || !hashes.has(value.toLowerCase())) {
    throw new Error(`Digest method not supported: ${String(value)}`);
  }
  return value;
}

function chunksOf(value: unknown): Uint8Array[] {
  if (!Array.isArray(value) || !value.every((c) => c instanceof Uint8Array)) {
    throw new TypeError('crypto: the data must be bytes');
  }
  const total = value.reduce((n: number, c: Uint8Array) => n + c.byteLength, 0);
  if (total > MAX_CRYPTO_INPUT_BYTES) {
    throw new RangeError(`crypto: more than ${MAX_CRYPTO_INPUT_BYTES} bytes in one digest`);
  }
  return value as Uint8Array[];
}

function bytesOf(value: unknown, what: string): Uint8Array {
  if (!(value instanceof Uint8Array)) throw new TypeError(`crypto: the ${what} must be bytes`);
  return value;
}

const copy = (b: Buffer): Uint8Array => new Uint8Array(b.buffer, b.byteOffset, b.byteLength);

/** One operation, as the prelude asks for it; throws what Node would throw, as an Error the isolate gets. */
export function hostCrypto(op: unknown, a: unknown, b: unknown, c: unknown): Uint8Array | string {
  switch (op) {
    case 'hash': {
      const hash = createHash(algorithm(a));
      for (const chunk of chunksOf(b)) hash.update(chunk);
      return copy(hash.digest());
    }
    case 'hmac': {
      const hmac = createHmac(algorithm(a), bytesOf(b, 'key'));
      for (const chunk of chunksOf(c)) hmac.update(chunk);
      return copy(hmac.digest());
    }
    case 'sign': {
      if (typeof b !== 'string' || b.length > 64 * 1024)
        throw new TypeError('crypto: the key must be PEM text');
      const sign = createSign(String(a));
      for (const chunk of chunksOf(c)) sign.update(chunk);
      return copy(sign.sign(b));
    }
    case 'random': {
      const n = Number(a);
      if (!Number.isInteger(n) || n < 0 || n > MAX_RANDOM_BYTES) {
        throw new RangeError(`crypto: between 0 and ${MAX_RANDOM_BYTES} random bytes per call`);
      }
      return copy(randomBytes(n));
    }
    case 'uuid':
      return randomUUID();
    default:
      throw new Error('crypto: unknown operation');
  }
}
