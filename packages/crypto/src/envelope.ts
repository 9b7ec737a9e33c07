import { createCipheriv, createDecipheriv, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';

const FORMAT = 'sb1';
/** Same layout, but the data key is shared by a batch of values (see `EnvelopeCipher.sharedKey`). */
const FORMAT_SHARED = 'sb2';
/** Unwrapped shared data keys kept for reading (one per batch of records, so a page needs a handful). */
const SHARED_KEY_CACHE = 512;
/**
 * First byte of the binary form of `sb2` (`SharedDataKey.sealBytes`): not a letter, so a text envelope kept as
 * its bytes (`s…`) is never taken for it.
 */
const FORMAT_SHARED_BYTES = 0x02;
const NONCE_BYTES = 12;
/** Nonces drawn at once for a shared key's values. */
const NONCE_POOL = 256;
const KEY_BYTES = 32;

export class CryptoError extends Error {
  override name = 'CryptoError';
}

/**
 * Versioned master keys from configuration (`1:<base64>,2:<base64>`). The highest version wraps new data
 * keys; older versions stay only so existing rows can be read until they are rewrapped.
 */
export class MasterKeyring {
  private readonly keys = new Map<number, Buffer>();
  private readonly secretKeys = new Map<number, KeyObject>();
  readonly currentVersion: number;

  constructor(spec: string) {
    for (const entry of spec
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)) {
      const [versionText, material] = entry.split(':');
      const version = Number(versionText);
      if (!Number.isInteger(version) || version < 1 || !material)
        throw new CryptoError('master key entries must be "<version>:<base64>"');
      const key = Buffer.from(material, 'base64');
      if (key.length !== KEY_BYTES)
        throw new CryptoError(`master key version ${version} must be 32 bytes of base64`);
      if (this.keys.has(version)) throw new CryptoError(`master key version ${version} is given twice`);
      this.keys.set(version, key);
      this.secretKeys.set(version, createSecretKey(key));
    }
    if (this.keys.size === 0) throw new CryptoError('no master key configured');
    this.currentVersion = Math.max(...this.keys.keys());
  }

  versions(): number[] {
    return [...this.keys.keys()].sort((a, b) => a - b);
  }

  key(version: number): Buffer {
    const key = this.keys.get(version);
    if (!key) throw new CryptoError(`master key version ${version} is not configured`);
    return key;
  }

  /**
   * The same key as a KeyObject: Node turns a raw key into one on every cipher it makes, which costs
   * several times the AES work of a small value; ciphers given a KeyObject skip that.
   */
  secretKey(version: number): KeyObject {
    const key = this.secretKeys.get(version);
    if (!key) throw new CryptoError(`master key version ${version} is not configured`);
    return key;
  }

  static generateKeyMaterial(): string {
    return randomBytes(KEY_BYTES).toString('base64');
  }
}

function seal(
  key: Buffer | KeyObject,
  plaintext: Buffer,
  aad: Buffer,
  nonce: Buffer = randomBytes(NONCE_BYTES),
): { nonce: Buffer; ciphertext: Buffer; tag: Buffer } {
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(aad);
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return { nonce, ciphertext, tag: cipher.getAuthTag() };
}

/**
 * GCM tags are always written whole (16 bytes). Node's decipher would also accept a tag cut to 4..15
 * bytes, and a 4-byte tag can be forged in about 2^32 tries: anything but 16 bytes is refused.
 */
const TAG_BYTES = 16;

const DECRYPTION_FAILED = 'decryption failed: wrong key, tampered data or ciphertext from another row';

function open(key: Buffer | KeyObject, nonce: Buffer, ciphertext: Buffer, tag: Buffer, aad: Buffer): Buffer {
  try {
    if (tag.length !== TAG_BYTES) throw new Error('truncated tag');
    const decipher = createDecipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES });
    decipher.setAAD(aad);
    decipher.setAuthTag(tag);
    const plaintext = decipher.update(ciphertext);
    // GCM's final() only checks the tag (it returns no bytes): no second buffer to join.
    const rest = decipher.final();
    return rest.length === 0 ? plaintext : Buffer.concat([plaintext, rest]);
  } catch {
    // Never echo key material or plaintext; the row identity is enough to investigate.
    throw new CryptoError(DECRYPTION_FAILED);
  }
}

const b64 = (b: Buffer) => b.toString('base64url');
const unb64 = (s: string | undefined) => {
  if (s === undefined) throw new CryptoError('malformed ciphertext');
  return Buffer.from(s, 'base64url');
};

/**
 * Envelope encryption: each value gets its own random data key (AES-256-GCM), and that data key is
 * wrapped by the current master key. `aad` must name the row (e.g. `vault.connection:42:credentials`),
 * so a ciphertext copied into another row fails to decrypt. Rotation rewraps only the data key.
 *
 * Format: `sb1.<masterVersion>.<wrapNonce>.<wrappedKey>.<wrapTag>.<nonce>.<ciphertext>.<tag>` (base64url).
 *
 * Many small values written together (a sync's batch of records) can share one data key instead
 * (`sharedKey()`, format `sb2`, same layout): the key is wrapped once per batch, each value still gets its own
 * nonce and the row's associated data, so a value copied to another row still fails. Reading caches the
 * unwrapped shared keys, so a page of records costs one AES-GCM operation per record instead of two (with
 * OpenSSL 3 each operation's context costs far more than the bytes: see bench/README.md, "Why the current settings").
 * `sealBytes` writes the same envelope in binary (for a bytea column); every reading method takes either.
 */
export class EnvelopeCipher {
  private readonly sharedKeys = new Map<string, KeyObject>();
  /** The binary form's last shared key and the bytes that name it (a page's values share a few keys). */
  private lastBinaryKey: { id: Buffer; key: KeyObject } | undefined;

  constructor(private readonly keyring: MasterKeyring) {}

  /**
   * A fresh data key for a batch of values, wrapped by the current master key once. Keep it for one batch
   * (a GCM key must not seal more than 2^32 values with random nonces; a batch is thousands at most).
   */
  sharedKey(): SharedDataKey {
    const raw = randomBytes(KEY_BYTES);
    const dataKey = createSecretKey(raw);
    const version = this.keyring.currentVersion;
    const wrapped = seal(this.keyring.secretKey(version), raw, sharedWrapAad(version));
    const header = sharedHeader(version, wrapped);
    const prefix = [
      FORMAT_SHARED,
      String(version),
      b64(wrapped.nonce),
      b64(wrapped.ciphertext),
      b64(wrapped.tag),
    ].join('.');
    // The batch's nonces are drawn from the CSPRNG a few hundred at a time (each still random and used
    // once): one randomBytes call per value was a visible share of sealing a chunk of records.
    let nonces = Buffer.alloc(0);
    let used = 0;
    const nextNonce = () => {
      if (used + NONCE_BYTES > nonces.length) {
        nonces = randomBytes(NONCE_BYTES * NONCE_POOL);
        used = 0;
      }
      return nonces.subarray(used, (used += NONCE_BYTES));
    };
    return {
      seal: (plaintext: string, aad: string) => {
        const sealed = seal(dataKey, Buffer.from(plaintext, 'utf8'), Buffer.from(aad, 'utf8'), nextNonce());
        return `${prefix}.${b64(sealed.nonce)}.${b64(sealed.ciphertext)}.${b64(sealed.tag)}`;
      },
      sealBytes: (plaintext: string, aad: string) => {
        const sealed = seal(dataKey, Buffer.from(plaintext, 'utf8'), Buffer.from(aad, 'utf8'), nextNonce());
        const out = Buffer.allocUnsafe(BIN.ciphertext + sealed.ciphertext.length);
        header.copy(out, 0);
        sealed.nonce.copy(out, BIN.nonce);
        sealed.tag.copy(out, BIN.tag);
        sealed.ciphertext.copy(out, BIN.ciphertext);
        return out;
      },
    };
  }

  encrypt(plaintext: string, aad: string): string {
    const dataKey = randomBytes(KEY_BYTES);
    const aadBytes = Buffer.from(aad, 'utf8');
    const version = this.keyring.currentVersion;
    const wrapped = seal(this.keyring.secretKey(version), dataKey, wrapAad(version, aadBytes));
    const sealed = seal(dataKey, Buffer.from(plaintext, 'utf8'), aadBytes);
    return [
      FORMAT,
      String(version),
      b64(wrapped.nonce),
      b64(wrapped.ciphertext),
      b64(wrapped.tag),
      b64(sealed.nonce),
      b64(sealed.ciphertext),
      b64(sealed.tag),
    ].join('.');
  }

  decrypt(blob: string | Buffer, aad: string): string {
    return this.decryptBytes(blob, aad).toString('utf8');
  }

  /**
   * As `decrypt`, the plaintext as the bytes it was sealed from (for callers that write bytes on). Takes the
   * text forms and the binary one (`sealBytes`); bytes in another format are read as a text envelope.
   */
  decryptBytes(blob: string | Buffer, aad: string): Buffer {
    if (typeof blob !== 'string') {
      if (blob[0] !== FORMAT_SHARED_BYTES) return this.decryptBytes(blob.toString('latin1'), aad);
      if (blob.length < BIN.ciphertext) throw new CryptoError('malformed ciphertext');
      return open(
        this.sharedKeyOfBytes(blob),
        blob.subarray(BIN.nonce, BIN.tag),
        blob.subarray(BIN.ciphertext),
        blob.subarray(BIN.tag, BIN.ciphertext),
        Buffer.from(aad, 'utf8'),
      );
    }
    const parts = parse(blob);
    const aadBytes = Buffer.from(aad, 'utf8');
    const dataKey = parts.shared ? this.openSharedKey(parts) : this.openDataKey(parts, aadBytes);
    return open(dataKey, parts.nonce, parts.ciphertext, parts.tag, aadBytes);
  }

  private openDataKey(parts: Parsed, aad: Buffer): Buffer {
    return open(
      this.keyring.secretKey(parts.version),
      unb64(parts.wrapNonce),
      unb64(parts.wrappedKey),
      unb64(parts.wrapTag),
      wrapAad(parts.version, aad),
    );
  }

  private unwrapSharedKey(parts: Parsed): Buffer {
    return open(
      this.keyring.secretKey(parts.version),
      unb64(parts.wrapNonce),
      unb64(parts.wrappedKey),
      unb64(parts.wrapTag),
      sharedWrapAad(parts.version),
    );
  }

  /** The shared key of a batch, unwrapped once and then kept (bounded, oldest dropped first). */
  private openSharedKey(parts: Parsed): KeyObject {
    return this.cachedSharedKey(parts.keyId, () => this.unwrapSharedKey(parts));
  }

  /**
   * As `openSharedKey`, of the binary form. The previous value's key is found by comparing its 64 naming
   * bytes in place: no string, no views made per value (what a page allocates per record is most of its GC).
   */
  private sharedKeyOfBytes(blob: Buffer): KeyObject {
    const last = this.lastBinaryKey;
    if (last && last.id.compare(blob, BIN.version, BIN.nonce) === 0) return last.key;
    const bin = parseBytes(blob);
    const key = this.cachedSharedKey(bin.keyId, () => this.unwrapSharedKeyBytes(bin));
    this.lastBinaryKey = { id: Buffer.from(blob.subarray(BIN.version, BIN.nonce)), key };
    return key;
  }

  private unwrapSharedKeyBytes(bin: ParsedBytes): Buffer {
    return open(
      this.keyring.secretKey(bin.version),
      bin.wrapNonce,
      bin.wrappedKey,
      bin.wrapTag,
      sharedWrapAad(bin.version),
    );
  }

  /**
   * Both forms share the cache: their ids never collide (the binary one is 64 characters, the text one
   * longer), and a key read in both forms is merely unwrapped once per form.
   */
  private cachedSharedKey(id: string, unwrap: () => Buffer): KeyObject {
    const cached = this.sharedKeys.get(id);
    if (cached) return cached;
    const raw = unwrap();
    const entry = createSecretKey(raw);
    raw.fill(0);
    if (this.sharedKeys.size >= SHARED_KEY_CACHE)
      this.sharedKeys.delete(this.sharedKeys.keys().next().value!);
    this.sharedKeys.set(id, entry);
    return entry;
  }

  encryptJson(value: unknown, aad: string): string {
    return this.encrypt(JSON.stringify(value), aad);
  }

  decryptJson<T>(blob: string | Buffer, aad: string): T {
    return JSON.parse(this.decrypt(blob, aad)) as T;
  }

  /** Master key version a blob's data key is wrapped with. */
  versionOf(blob: string | Buffer): number {
    if (typeof blob !== 'string')
      return blob[0] === FORMAT_SHARED_BYTES
        ? parseBytes(blob).version
        : parse(blob.toString('latin1')).version;
    return parse(blob).version;
  }

  /** Re-wraps the data key under the current master key; the data ciphertext is untouched. */
  rewrap(blob: string, aad: string): string;
  /** The binary form stays binary; bytes in another format are rewrapped as the text envelope they hold. */
  rewrap(blob: Buffer, aad: string): Buffer;
  rewrap(blob: string | Buffer, aad: string): string | Buffer {
    if (typeof blob !== 'string') {
      if (blob[0] !== FORMAT_SHARED_BYTES)
        return Buffer.from(this.rewrap(blob.toString('latin1'), aad), 'latin1');
      return this.rewrapBytes(blob);
    }
    const parts = parse(blob);
    const current = this.keyring.currentVersion;
    if (parts.version === current) return blob;
    const aadBytes = Buffer.from(aad, 'utf8');
    const dataKey = parts.shared ? this.unwrapSharedKey(parts) : this.openDataKey(parts, aadBytes);
    const wrapped = seal(
      this.keyring.secretKey(current),
      dataKey,
      parts.shared ? sharedWrapAad(current) : wrapAad(current, aadBytes),
    );
    return [
      parts.shared ? FORMAT_SHARED : FORMAT,
      String(current),
      b64(wrapped.nonce),
      b64(wrapped.ciphertext),
      b64(wrapped.tag),
      b64(parts.nonce),
      b64(parts.ciphertext),
      b64(parts.tag),
    ].join('.');
  }

  private rewrapBytes(blob: Buffer): Buffer {
    if (parseBytes(blob).version === this.keyring.currentVersion) return blob;
    const out = Buffer.from(blob);
    this.rewrapSharedHeader(blob).copy(out, 0);
    return out;
  }

  /**
   * The binary form's key header (its first `SHARED_HEADER_BYTES`: format, version, wrapped data key) with the
   * same data key wrapped under the current master key (a fresh wrap nonce). Every value sealed with that
   * data key stays valid with the new header in place of the old one: a batch of records that shared a key
   * can be rewrapped once and keep sharing it (readers cache one unwrapped key per header). Throws when the
   * header cannot be opened with any configured key.
   */
  rewrapSharedHeader(blob: Buffer): Buffer {
    if (blob.length < SHARED_HEADER_BYTES || blob[0] !== FORMAT_SHARED_BYTES)
      throw new CryptoError('malformed ciphertext');
    const version = blob.readUInt32BE(BIN.version);
    const current = this.keyring.currentVersion;
    const dataKey = open(
      this.keyring.secretKey(version),
      blob.subarray(BIN.wrapNonce, BIN.wrappedKey),
      blob.subarray(BIN.wrappedKey, BIN.wrapTag),
      blob.subarray(BIN.wrapTag, BIN.nonce),
      sharedWrapAad(version),
    );
    return sharedHeader(current, seal(this.keyring.secretKey(current), dataKey, sharedWrapAad(current)));
  }
}

export interface SharedDataKey {
  /** Seals one value; `aad` names its row, as for `encrypt`. */
  seal(plaintext: string, aad: string): string;
  /**
   * As `seal`, in the binary form (for a bytea column: a third fewer bytes than the text, and nothing to split
   * or decode when it is read). Layout: format byte 0x02, master key version (uint32 BE), wrap nonce (12),
   * wrapped key (32), wrap tag (16), nonce (12), tag (16), ciphertext (the rest).
   */
  sealBytes(plaintext: string, aad: string): Buffer;
}

/** Offsets of the binary form's fields (`SharedDataKey.sealBytes`). */
const BIN = {
  version: 1,
  wrapNonce: 5,
  wrappedKey: 5 + NONCE_BYTES,
  wrapTag: 5 + NONCE_BYTES + KEY_BYTES,
  nonce: 5 + NONCE_BYTES + KEY_BYTES + TAG_BYTES,
  tag: 5 + 2 * NONCE_BYTES + KEY_BYTES + TAG_BYTES,
  ciphertext: 5 + 2 * NONCE_BYTES + KEY_BYTES + 2 * TAG_BYTES,
} as const;

/**
 * Bytes at the start of the binary form that hold its data key (format, master key version, wrapped key):
 * the same for every value sealed with one `SharedDataKey`.
 */
export const SHARED_HEADER_BYTES = BIN.nonce;

/** The binary form's key header of a shared data key wrapped by master key `version`. */
function sharedHeader(version: number, wrapped: { nonce: Buffer; ciphertext: Buffer; tag: Buffer }): Buffer {
  const header = Buffer.allocUnsafe(SHARED_HEADER_BYTES);
  header[0] = FORMAT_SHARED_BYTES;
  header.writeUInt32BE(version, BIN.version);
  wrapped.nonce.copy(header, BIN.wrapNonce);
  wrapped.ciphertext.copy(header, BIN.wrappedKey);
  wrapped.tag.copy(header, BIN.wrapTag);
  return header;
}

type ParsedBytes = ReturnType<typeof parseBytes>;

/** The binary form's fields, as views of `blob` (nothing copied). */
function parseBytes(blob: Buffer) {
  if (blob.length < BIN.ciphertext || blob[0] !== FORMAT_SHARED_BYTES)
    throw new CryptoError('malformed ciphertext');
  const version = blob.readUInt32BE(BIN.version);
  return {
    // The master key version and the whole wrapped key: names the batch's key, one short string per record.
    keyId: blob.toString('latin1', BIN.version, BIN.nonce),
    version,
    wrapNonce: blob.subarray(BIN.wrapNonce, BIN.wrappedKey),
    wrappedKey: blob.subarray(BIN.wrappedKey, BIN.wrapTag),
    wrapTag: blob.subarray(BIN.wrapTag, BIN.nonce),
    nonce: blob.subarray(BIN.nonce, BIN.tag),
    tag: blob.subarray(BIN.tag, BIN.ciphertext),
    ciphertext: blob.subarray(BIN.ciphertext),
  };
}

function wrapAad(version: number, aad: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`dek:v${version}:`, 'utf8'), aad]);
}

/** A shared key belongs to no single row; the values it seals are bound to theirs. */
function sharedWrapAad(version: number): Buffer {
  return Buffer.from(`dek:v${version}:shared`, 'utf8');
}

type Parsed = ReturnType<typeof parse>;

const checked = (s: string | undefined): string => {
  if (s === undefined) throw new CryptoError('malformed ciphertext');
  return s;
};

function parse(blob: string) {
  const parts = blob.split('.');
  if (parts.length !== 8 || (parts[0] !== FORMAT && parts[0] !== FORMAT_SHARED))
    throw new CryptoError('malformed ciphertext');
  const version = Number(parts[1]);
  if (!Number.isInteger(version)) throw new CryptoError('malformed ciphertext');
  return {
    shared: parts[0] === FORMAT_SHARED,
    /** The master key version and the whole wrapped data key: names a shared key's batch. */
    keyId: blob.slice(
      parts[0].length + 1,
      parts[0].length + parts[1]!.length + parts[2]!.length + parts[3]!.length + parts[4]!.length + 4,
    ),
    version,
    // The wrapped key stays text until it is opened: a shared key is usually cached already.
    wrapNonce: checked(parts[2]),
    wrappedKey: checked(parts[3]),
    wrapTag: checked(parts[4]),
    nonce: unb64(parts[5]),
    ciphertext: unb64(parts[6]),
    tag: unb64(parts[7]),
  };
}
