import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { Credentials, EndUser } from '@switchboard/contracts';
import { CredentialsCipher, expiresAtOf } from '../../credentials/credentials-cipher';
import { SecretConfigFields } from '../../credentials/secret-config';
import { authEvent } from '../../events/auth-event';
import { OutboxPublisher } from '../../events/outbox';
import { ConnectionsRepository, type ConnectionKey, type ConnectionRow } from '../connections.repository';

export interface StoreInput {
  key: ConnectionKey;
  provider: string;
  credentials: Credentials;
  connectionConfig: Record<string, unknown>;
  /** undefined = keep the current value; null = clear it. */
  metadata?: Record<string, unknown> | null | undefined;
  /** undefined = keep the current tags. */
  tags?: Record<string, string> | undefined;
  /** undefined or null = keep the current end user. */
  endUser?: EndUser | null | undefined;
  /** undefined = keep the current value; null = clear it. */
  webhookUrlOverride?: string | null | undefined;
}

/**
 * Creates a connection or overrides an existing one (same environment, integration and connection id)
 * with new credentials, and announces it with an auth event (`creation` / `override`). Used by
 * auth-connect when a connect flow finishes and by the public import.
 */
@Injectable()
export class StoreConnection {
  constructor(
    private readonly repository: ConnectionsRepository,
    private readonly cipher: CredentialsCipher,
    private readonly outbox: OutboxPublisher,
    private readonly secretFields: SecretConfigFields,
  ) {}

  async execute(input: StoreInput): Promise<{ row: ConnectionRow; operation: 'creation' | 'override' }> {
    const eventId = `auth-${randomUUID()}`;
    // Secret config fields (the catalog's `secret: true`) are sealed with the credentials, never stored plain.
    const config = this.secretFields.split(input.provider, input.connectionConfig);
    const result = await this.repository.upsert(
      input.key,
      {
        provider: input.provider,
        sealCredentials: (rowId) => this.cipher.seal(rowId, input.credentials, config.secret),
        credentialsExpiresAt: expiresAtOf(input.credentials) ?? null,
        connectionConfig: config.plain,
        metadata: input.metadata,
        tags: input.tags,
        endUser: input.endUser ?? undefined,
        webhookUrlOverride: input.webhookUrlOverride,
      },
      (row, operation) => authEvent(row, eventId, operation),
    );
    await this.outbox.flush([eventId]);
    return result;
  }
}
