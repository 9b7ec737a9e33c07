import * as crypto from 'node:crypto';
import { promisify } from 'node:util';

/**
 * Console passwords, hashed with a memory-hard function into a PHC string, so the parameters travel with
 * each hash and can be raised later without breaking older ones.
 *
 * argon2id with OWASP's first recommended set (19 MiB, 2 passes, 1 lane) through Node's own `crypto.argon2`
 * (Node 24.7+). Where Node lacks it, scrypt with OWASP's parameters (N = 2^17, r = 8, p = 1).
 */
export const ARGON2_PARAMS = { memory: 19_456, passes: 2, parallelism: 1 } as const;
export const SCRYPT_PARAMS = { logN: 17, r: 8, p: 1 } as const;
const SALT_BYTES = 16;
const HASH_BYTES = 32;

type Argon2 = (
  algorithm: 'argon2id',
  parameters: {
    message: string | Buffer;
    nonce: Buffer;
    parallelism: number;
    tagLength: number;
    memory: number;
    passes: number;
  },
  callback: (error: Error | null, derivedKey: Buffer) => void,
) => void;

/** Node's argon2, when this runtime has it. */
const nodeArgon2 = (crypto as unknown as { argon2?: Argon2 }).argon2;
const argon2 = nodeArgon2 ? promisify(nodeArgon2) : undefined;

const scrypt = (password: string, salt: Buffer, logN: number, r: number, p: number) =>
  new Promise<Buffer>((resolve, reject) => {
    const N = 2 ** logN;
    // OpenSSL's default ceiling (32 MiB) is below 128 · N · r for N = 2^17.
    crypto.scrypt(password, salt, HASH_BYTES, { N, r, p, maxmem: 256 * N * r }, (error, key) =>
      error ? reject(error) : resolve(key),
    );
  });

const b64 = (buffer: Buffer) => buffer.toString('base64').replace(/=+$/, '');

export type PasswordAlgorithm = 'argon2id' | 'scrypt';

/** argon2id when this Node has it, else scrypt. */
export const defaultAlgorithm = (): PasswordAlgorithm => (argon2 ? 'argon2id' : 'scrypt');

export async function hashPassword(
  password: string,
  algorithm: PasswordAlgorithm = defaultAlgorithm(),
): Promise<string> {
  const salt = crypto.randomBytes(SALT_BYTES);
  if (algorithm === 'argon2id') {
    if (!argon2) throw new Error('crypto.argon2 is not available in this Node.js');
    const { memory, passes, parallelism } = ARGON2_PARAMS;
    const key = await argon2('argon2id', {
      message: password,
      nonce: salt,
      parallelism,
      tagLength: HASH_BYTES,
      memory,
      passes,
    });
    return `$argon2id$v=19$m=${memory},t=${passes},p=${parallelism}$${b64(salt)}$${b64(key)}`;
  }
  const { logN, r, p } = SCRYPT_PARAMS;
  const key = await scrypt(password, salt, logN, r, p);
  return `$scrypt$ln=${logN},r=${r},p=${p}$${b64(salt)}$${b64(key)}`;
}

const ARGON2_PHC = /^\$argon2id\$v=19\$m=(\d+),t=(\d+),p=(\d+)\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/;
const SCRYPT_PHC = /^\$scrypt\$ln=(\d+),r=(\d+),p=(\d+)\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/;

/** Whether `password` matches `stored`; false (never an exception) for a malformed or unknown hash. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  try {
    return await verify(password, stored);
  } catch {
    return false;
  }
}

async function verify(password: string, stored: string): Promise<boolean> {
  const argon = ARGON2_PHC.exec(stored);
  if (argon && argon2) {
    const [, m, t, p, salt, hash] = argon as unknown as [string, string, string, string, string, string];
    const expected = Buffer.from(hash, 'base64');
    const key = await argon2('argon2id', {
      message: password,
      nonce: Buffer.from(salt, 'base64'),
      parallelism: Number(p),
      tagLength: expected.length,
      memory: Number(m),
      passes: Number(t),
    });
    return key.length === expected.length && crypto.timingSafeEqual(key, expected);
  }
  const scryptMatch = SCRYPT_PHC.exec(stored);
  if (scryptMatch) {
    const [, ln, r, p, salt, hash] = scryptMatch as unknown as [
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    const expected = Buffer.from(hash, 'base64');
    const key = await scrypt(password, Buffer.from(salt, 'base64'), Number(ln), Number(r), Number(p));
    return key.length === expected.length && crypto.timingSafeEqual(key, expected);
  }
  return false;
}
