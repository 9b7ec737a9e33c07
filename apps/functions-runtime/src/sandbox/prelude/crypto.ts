import { Buffer, cryptoReference } from './context';
import type { ScriptValue } from './isolate';

/**
 * require('crypto') and Web Crypto's two synchronous calls: Node's crypto, computed by the host
 * (host-crypto.ts), so results equal Node's byte for byte. Bytes in, bytes out, copied both ways.
 */

const cryptoCall = (op: string, a?: unknown, b?: unknown, c?: unknown): any =>
  cryptoReference().applySync(undefined, [op, a, b, c], {
    arguments: { copy: true },
    result: { copy: true },
  });

/** A string (in its encoding), a typed array or an ArrayBuffer as bytes; Node's error for anything else. */
export const bytesOf = (data: unknown, encoding: string | undefined, what: string): Uint8Array => {
  if (typeof data === 'string') return Buffer().from(data, encoding || 'utf8');
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  throw new TypeError(
    'The "' + what + '" argument must be of type string or an instance of Buffer, TypedArray, or DataView',
  );
};
// Each update keeps a copy of its bytes (a script may reuse its buffer); digest sends them all at once.
const copyOf = (view: Uint8Array): Uint8Array => new Uint8Array(view);
const output = (bytes: Uint8Array, encoding: string | undefined): ScriptValue => {
  const buf = Buffer().from(bytes);
  return encoding === undefined || encoding === 'buffer' ? buf : buf.toString(encoding);
};

class Hash {
  private _chunks: Uint8Array[] = [];
  private _done = false;
  private readonly _algorithm: string;
  constructor(
    algorithm: unknown,
    private readonly _op: 'hash' | 'hmac',
    private readonly _key?: Uint8Array,
  ) {
    this._algorithm = String(algorithm);
    // Unknown algorithms fail here, as in Node.
    cryptoCall(_op, this._algorithm, _op === 'hmac' ? _key : [], _op === 'hmac' ? [] : undefined);
  }
  update(data: unknown, encoding?: string): this {
    if (this._done) throw new Error('Digest already called');
    this._chunks.push(copyOf(bytesOf(data, encoding, 'data')));
    return this;
  }
  digest(encoding?: string): ScriptValue {
    if (this._done) throw new Error('Digest already called');
    this._done = true;
    const chunks = this._chunks;
    this._chunks = [];
    const out =
      this._op === 'hmac'
        ? cryptoCall('hmac', this._algorithm, this._key, chunks)
        : cryptoCall('hash', this._algorithm, chunks);
    return output(out, encoding);
  }
  copy(): Hash {
    if (this._done) throw new Error('Digest already called');
    const twin = Object.create(Hash.prototype) as Hash;
    Object.assign(twin, this, { _chunks: this._chunks.slice() });
    return twin;
  }
}

class Sign {
  private readonly _chunks: Uint8Array[] = [];
  private readonly _algorithm: string;
  constructor(algorithm: unknown) {
    this._algorithm = String(algorithm);
  }
  update(data: unknown, encoding?: string): this {
    this._chunks.push(copyOf(bytesOf(data, encoding, 'data')));
    return this;
  }
  sign(key: ScriptValue, encoding?: string): ScriptValue {
    const pem =
      typeof key === 'string'
        ? key
        : key && typeof key.key === 'string'
          ? key.key
          : ArrayBuffer.isView(key)
            ? Buffer().from(key.buffer, key.byteOffset, key.byteLength).toString('utf8')
            : undefined;
    if (pem === undefined) throw new TypeError('sign needs the private key as PEM text');
    return output(cryptoCall('sign', this._algorithm, pem, this._chunks), encoding);
  }
}

const randomFill = <T extends ArrayBufferView>(view: T): T => {
  const bytes = cryptoCall('random', view.byteLength);
  new Uint8Array(view.buffer, view.byteOffset, view.byteLength).set(bytes);
  return view;
};

export const getRandomValues = <T extends ArrayBufferView>(view: T): T => {
  if (
    !ArrayBuffer.isView(view) ||
    view instanceof Float32Array ||
    view instanceof Float64Array ||
    view instanceof DataView
  ) {
    throw new TypeError('getRandomValues needs an integer typed array');
  }
  if (view.byteLength > 65536) throw new RangeError('getRandomValues: more than 65536 bytes requested');
  return randomFill(view);
};

export const randomUUID = (): string => cryptoCall('uuid');

let cryptoModule: ScriptValue;
export const crypto = (): ScriptValue => {
  if (cryptoModule) return cryptoModule;
  cryptoModule = {
    createHash: (algorithm: unknown) => new Hash(algorithm, 'hash'),
    createHmac: (algorithm: unknown, key: unknown) =>
      new Hash(algorithm, 'hmac', copyOf(bytesOf(key, 'utf8', 'key'))),
    createSign: (algorithm: unknown) => new Sign(algorithm),
    randomBytes: (size: unknown, callback?: unknown) => {
      const bytes = Buffer().from(cryptoCall('random', Number(size)));
      if (typeof callback === 'function') {
        void Promise.resolve().then(() => callback(null, bytes));
        return undefined;
      }
      return bytes;
    },
    randomUUID,
    randomInt: (min: number, max?: number) => {
      if (max === undefined) {
        max = min;
        min = 0;
      }
      const range = max - min;
      if (!Number.isSafeInteger(min) || !Number.isSafeInteger(max) || range <= 0 || range > 2 ** 48) {
        throw new RangeError('randomInt needs safe integers with 0 < max - min <= 2^48');
      }
      // Rejection sampling over 48 random bits: no modulo bias.
      const limit = 2 ** 48 - (2 ** 48 % range);
      for (;;) {
        const b = cryptoCall('random', 6);
        const n = ((b[0] * 256 + b[1]) * 256 + b[2]) * 16777216 + ((b[3] * 256 + b[4]) * 256 + b[5]);
        if (n < limit) return min + (n % range);
      }
    },
    timingSafeEqual: (a: unknown, b: unknown) => {
      const x = bytesOf(a, undefined, 'buf1');
      const y = bytesOf(b, undefined, 'buf2');
      if (x.byteLength !== y.byteLength) throw new RangeError('Input buffers must have the same byte length');
      let diff = 0;
      for (let i = 0; i < x.byteLength; i++) diff |= x[i]! ^ y[i]!;
      return diff === 0;
    },
    getRandomValues,
    webcrypto: { getRandomValues, randomUUID },
  };
  return cryptoModule;
};
