import { Injectable } from '@nestjs/common';
import type { Credentials } from '@switchboard/contracts';
import { EnvelopeCipher } from '@switchboard/crypto';

/**
 * The associated data binding a ciphertext to its row: decrypting it under any other row id fails, so a
 * person who can write the table but does not hold the master key cannot move credentials between
 * connections (e.g. to read a victim's token through their own connection).
 */
export const credentialsAad = (rowId: number): string => `vault.connections:${rowId}:credentials`;

@Injectable()
export class CredentialsCipher {
  constructor(private readonly cipher: EnvelopeCipher) {}

  seal(rowId: number, credentials: Credentials): string {
    return this.cipher.encryptJson(credentials, credentialsAad(rowId));
  }

  open(rowId: number, blob: string): Credentials {
    return this.cipher.decryptJson<Credentials>(blob, credentialsAad(rowId));
  }

  /** The plaintext, for telling a real change apart from a rewrap (same plaintext, new ciphertext). */
  openText(rowId: number, blob: string | null): string | null {
    return blob === null ? null : this.cipher.decrypt(blob, credentialsAad(rowId));
  }
}

/** `expires_at` of credentials that carry one, as a Date (undefined when absent or unparseable). */
export function expiresAtOf(credentials: Credentials): Date | undefined {
  const value = (credentials as { expires_at?: unknown }).expires_at;
  if (typeof value !== 'string' && typeof value !== 'number') return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date;
}
