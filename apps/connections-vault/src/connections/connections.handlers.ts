import { ConnectionChanges } from '../events/connection-changes';
import { Controller } from '@nestjs/common';
import {
  connectionCredentialsRequestSchema,
  type ConnectionIdsRequest,
  integrationRefSchema,
  matchConnectionsRequestSchema,
  type ConnectionCredentials,
  type EndUser,
  type StoreConnectionRequest,
  type StoredConnection,
  CONNECTION_REQUESTS,
  VAULT_REQUESTS,
} from '@switchboard/contracts';
import { NatsHandler } from '@switchboard/messaging';
import type { z } from 'zod';
import { VaultError } from '../vault.errors';
import { CredentialsCipher } from '../credentials/credentials-cipher';
import { ConnectionsRepository } from './connections.repository';
import { AcceptConnection } from './use-cases/accept-connection';
import { ReadConnection } from './use-cases/read-connection';
import { StoreConnection } from './use-cases/store-connection';

type IntegrationRef = z.infer<typeof integrationRefSchema>;

/** What the other services ask the vault for (never exposed as is through the public API). */
@Controller()
export class ConnectionsHandlers {
  constructor(
    private readonly repository: ConnectionsRepository,
    private readonly store: StoreConnection,
    private readonly accept: AcceptConnection,
    private readonly read: ReadConnection,
    private readonly changes: ConnectionChanges,
    private readonly cipher: CredentialsCipher,
  ) {}

  @NatsHandler(CONNECTION_REQUESTS.countForIntegration)
  async countForIntegration(ref: IntegrationRef): Promise<number> {
    return this.repository.countForIntegration(ref.environmentId, ref.providerConfigKey);
  }

  /** sync-orchestrator: the connections a sync runs for (all of an integration's, or the one named). */
  @NatsHandler(CONNECTION_REQUESTS.idsForIntegration)
  idsForIntegration(req: ConnectionIdsRequest): Promise<string[]> {
    return this.repository.idsForIntegration(req.environmentId, req.providerConfigKey, req.connectionId);
  }

  /** Called when an integration is deleted: its connections go with it. */
  @NatsHandler(CONNECTION_REQUESTS.deleteForIntegration)
  async deleteForIntegration(ref: IntegrationRef): Promise<number> {
    const deleted = await this.repository.deleteForIntegration(ref.environmentId, ref.providerConfigKey);
    this.changes.announce(ref.environmentId, ref.providerConfigKey);
    return deleted;
  }

  /** auth-connect finished a flow: validate, then create or override the connection and announce it. */
  @NatsHandler(VAULT_REQUESTS.store)
  async storeConnection(req: StoreConnectionRequest): Promise<StoredConnection> {
    const input = {
      key: {
        environmentId: req.environmentId,
        providerConfigKey: req.providerConfigKey,
        connectionId: req.connectionId,
      },
      provider: req.provider,
      credentials: req.credentials,
      connectionConfig: req.connectionConfig,
      metadata: req.metadata,
      tags: req.tags,
      endUser: req.endUser,
      webhookUrlOverride: req.webhookUrlOverride,
    };
    const { row, operation } = req.caller
      ? await this.accept.execute({
          ...input,
          caller: req.caller,
          operation: req.operation,
          announceRefusedOverride: true,
        })
      : await this.store.execute(input);
    this.changes.announce(req.environmentId, req.providerConfigKey);
    return {
      id: row.id,
      connectionId: row.connectionId,
      providerConfigKey: row.providerConfigKey,
      operation,
    };
  }

  /** A connection's credentials for the proxy, the relay and functions; refreshed first when they expire soon. */
  @NatsHandler(VAULT_REQUESTS.credentials)
  async credentials(req: z.infer<typeof connectionCredentialsRequestSchema>): Promise<ConnectionCredentials> {
    const key = {
      environmentId: req.environmentId,
      providerConfigKey: req.providerConfigKey,
      connectionId: req.connectionId,
    };
    const found = await this.read.execute(key, true, { force: req.forceRefresh, githubAppJwt: false });
    if (!found?.credentials)
      throw new VaultError(
        'unknown_connection',
        `No connection "${req.connectionId}" for integration "${req.providerConfigKey}"`,
      );
    return {
      connectionId: found.row.connectionId,
      providerConfigKey: found.row.providerConfigKey,
      provider: found.row.provider,
      credentials: found.credentials,
      // The services that call the provider get the whole config, secret fields included.
      connectionConfig: {
        ...((found.row.connectionConfig as Record<string, unknown> | null) ?? {}),
        ...this.cipher.openSecretConfig(found.row.id, found.row.credentials),
      },
      metadata: (found.row.metadata as Record<string, unknown> | null) ?? null,
    };
  }

  /** webhook-relay: which connections a provider webhook belongs to. */
  @NatsHandler(VAULT_REQUESTS.match)
  async match(req: z.infer<typeof matchConnectionsRequestSchema>) {
    const rows = await this.repository.match(req.environmentId, req.providerConfigKey, req.field, req.value);
    return rows.map((row) => ({
      connectionId: row.connectionId,
      webhookUrlOverride: row.webhookUrlOverride,
      tags: (row.tags as Record<string, string> | null) ?? {},
      endUser: (row.endUser as EndUser | null) ?? null,
    }));
  }
}
