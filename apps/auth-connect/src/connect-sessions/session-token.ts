import { createHash, randomBytes } from 'node:crypto';
import { CONNECT_SESSION_TOKEN_PREFIX } from '@switchboard/contracts';

/** 32 random bytes, the format Nango issues; only the SHA-256 is ever stored or sent between services. */
export const generateSessionToken = (): string =>
  `${CONNECT_SESSION_TOKEN_PREFIX}${randomBytes(32).toString('hex')}`;
export const hashSessionToken = (token: string): string =>
  createHash('sha256').update(token, 'utf8').digest('hex');
