import { Injectable } from '@nestjs/common';
import type { Credentials } from '@switchboard/contracts';
import { EnvelopeCipher } from '@switchboard/crypto';

/**
 * The associated data binding a ciphertext to its row: decrypting it under any other row id fails, so a
 * person who can write the table but does not hold the master key cannot move credentials between
 * connections (e.g. to read a victim's token through their own connection).
 */
export const credentialsAad = (rowId: number): string => `vault.connections:${rowId}:credentials`;

/**
 * The member of the sealed JSON that holds the connection-config fields the catalog marks `secret: true`
 * (Datadog's `applicationKey`): they are sealed with the credentials, so they rotate, rewrap and refresh
 * with them, and the `connection_config` column never holds them. Absent when there are none, so older
 * blobs read unchanged. Top-level credential members are ours (a provider's answer sits under `raw`).
 */
const SECRET_CONFIG = '$connection_config';

type Sealed = Credentials & { [SECRET_CONFIG]?: Record<string, unknown> };

@Injectable()
export class CredentialsCipher {
  constructor(private readonly cipher: EnvelopeCipher) {}

  seal(rowId: number, credentials: Credentials, secretConfig: Record<string, unknown> = {}): string {
    const { [SECRET_CONFIG]: _ignored, ...plain } = credentials as Sealed;
    const sealed: Sealed =
      Object.keys(secretConfig).length > 0 ? { ...plain, [SECRET_CONFIG]: secretConfig } : plain;
    return this.cipher.encryptJson(sealed, credentialsAad(rowId));
  }

  /** The credentials alone (without the sealed connection-config fields). */
  open(rowId: number, blob: string): Credentials {
    return credentialsOf(this.cipher.decryptJson<Sealed>(blob, credentialsAad(rowId)));
  }

  /** The secret connection-config fields sealed with the credentials (`{}` when none). */
  openSecretConfig(rowId: number, blob: string | null): Record<string, unknown> {
    if (blob === null) return {};
    return this.cipher.decryptJson<Sealed>(blob, credentialsAad(rowId))[SECRET_CONFIG] ?? {};
  }

  /** The plaintext, for telling a real change apart from a rewrap (same plaintext, new ciphertext). */
  openText(rowId: number, blob: string | null): string | null {
    return blob === null ? null : this.cipher.decrypt(blob, credentialsAad(rowId));
  }
}

/** The credentials of a plaintext from `openText`. */
export function credentialsOf(sealed: unknown): Credentials {
  const { [SECRET_CONFIG]: _secret, ...credentials } = sealed as Sealed;
  return credentials as Credentials;
}

/** `expires_at` of credentials that carry one, as a Date (undefined when absent or unparseable). */
export function expiresAtOf(credentials: Credentials): Date | undefined {
  const value = (credentials as { expires_at?: unknown }).expires_at;
  if (typeof value !== 'string' && typeof value !== 'number') return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date;
}
