import { randomUUID } from 'node:crypto';
import { ConnectionChanges } from '../events/connection-changes';
import { OutboxPublisher } from '../events/outbox';
import { Controller, Logger } from '@nestjs/common';
import {
  connectionEventSchema,
  EVENT_SUBJECTS,
  SwitchboardError,
  type ApiPublicConnection,
  type ApiPublicConnectionFull,
  type Caller,
  type ConnectionMetadataRequest,
  type DeleteConnectionRequest,
  type GetConnectionRequest,
  type ImportConnectionRequest,
  type ListConnectionsRequest,
  type PatchConnectionRequest,
  CONNECTIONS_API_REQUESTS,
  INTEGRATION_REQUESTS,
  ON_EVENT_REQUESTS,
} from '@switchboard/contracts';
import { NatsHandler, NatsRequester } from '@switchboard/messaging';
import { VaultError } from '../vault.errors';

/**
 * Longest a deletion waits for the pre-connection-deletion scripts: under the gateway's 10 s NATS wait,
 * above the orchestrator's default 5 s per script.
 */
const PRE_DELETION_WAIT_MS = 8_000;
import { endUserFromInput, toFullConnection, toPublicConnection } from './connection-view';
import { CredentialsCipher } from '../credentials/credentials-cipher';
import { SecretConfigFields } from '../credentials/secret-config';
import { ConnectionsRepository } from './connections.repository';
import { ImportConnection } from './use-cases/import-connection';
import { ReadConnection } from './use-cases/read-connection';

/** The public connections API, asked by the gateway after it validated the request and the key's scopes. */
@Controller()
export class ConnectionsApiHandlers {
  private readonly logger = new Logger('Connections');

  constructor(
    private readonly repository: ConnectionsRepository,
    private readonly read: ReadConnection,
    private readonly importer: ImportConnection,
    private readonly nats: NatsRequester,
    private readonly changes: ConnectionChanges,
    private readonly cipher: CredentialsCipher,
    private readonly secretFields: SecretConfigFields,
    private readonly outbox: OutboxPublisher,
  ) {}

  @NatsHandler(CONNECTIONS_API_REQUESTS.list)
  async list(req: ListConnectionsRequest): Promise<{ connections: ApiPublicConnection[] }> {
    const rows = await this.repository.list(req.caller.environmentId, req.filters);
    return { connections: rows.map(toPublicConnection) };
  }

  @NatsHandler(CONNECTIONS_API_REQUESTS.get)
  async get(req: GetConnectionRequest): Promise<ApiPublicConnectionFull> {
    const key = {
      environmentId: req.caller.environmentId,
      providerConfigKey: req.providerConfigKey,
      connectionId: req.connectionId,
    };
    const found = await this.read.execute(key, req.includeCredentials, {
      force: req.forceRefresh,
      githubAppJwt: req.refreshGithubAppJwtToken,
    });
    if (!found) throw await this.missing(req.caller, req.providerConfigKey);
    const column = (found.row.connectionConfig as Record<string, unknown> | null) ?? {};
    // Secret config fields are shown only with the credentials (the key holds connections:read_credentials).
    if (!req.includeCredentials || !found.credentials)
      return toFullConnection(
        found.row,
        undefined,
        false,
        this.secretFields.redact(found.row.provider, column),
      );
    return toFullConnection(found.row, found.credentials, req.includeRefreshToken, {
      ...column,
      ...this.cipher.openSecretConfig(found.row.id, found.row.credentials),
    });
  }

  @NatsHandler(CONNECTIONS_API_REQUESTS.patch)
  async patch(req: PatchConnectionRequest): Promise<{ success: true }> {
    const key = {
      environmentId: req.caller.environmentId,
      providerConfigKey: req.providerConfigKey,
      connectionId: req.connectionId,
    };
    const { body } = req;
    const updated = await this.repository.patch(key, {
      ...(body.tags !== undefined ? { tags: body.tags } : {}),
      ...(body.end_user !== undefined ? { endUser: endUserFromInput(body.end_user) } : {}),
      ...(body.webhook_url_override !== undefined
        ? { webhookUrlOverride: body.webhook_url_override || null }
        : {}),
    });
    if (!updated) throw await this.missing(req.caller, req.providerConfigKey);
    this.changes.announce(key.environmentId, key.providerConfigKey);
    return { success: true };
  }

  @NatsHandler(CONNECTIONS_API_REQUESTS.delete)
  async delete(req: DeleteConnectionRequest): Promise<{ success: true }> {
    const key = {
      environmentId: req.caller.environmentId,
      providerConfigKey: req.providerConfigKey,
      connectionId: req.connectionId,
    };
    if (await this.repository.findByKey(key)) await this.beforeDeletion(req);
    // The orchestrator also hears of it durably: if it was down just now, it removes the syncs later.
    const event = connectionEventSchema.parse({
      id: `connection-${randomUUID()}`,
      ...key,
      operation: 'deletion',
      occurredAt: new Date().toISOString(),
    });
    const deleted = await this.repository.delete(key, {
      eventId: event.id,
      subject: EVENT_SUBJECTS.connection,
      payload: event,
    });
    if (!deleted) {
      throw new VaultError(
        'unknown_connection',
        `No connection "${req.connectionId}" for integration "${req.providerConfigKey}"`,
      );
    }
    await this.outbox.flush([event.id]);
    this.changes.announce(req.caller.environmentId, req.providerConfigKey);
    return { success: true };
  }

  /**
   * The integration's pre-connection-deletion scripts run while the connection still exists. Fail-open:
   * a script that fails, a slow one (bounded wait) or an orchestrator that is down never keeps a customer
   * from deleting a connection; the run and its logs stay readable in the orchestrator.
   */
  private async beforeDeletion(req: DeleteConnectionRequest): Promise<void> {
    try {
      const reply = await this.nats.call(
        ON_EVENT_REQUESTS.preConnectionDeletion,
        { caller: req.caller, providerConfigKey: req.providerConfigKey, connectionId: req.connectionId },
        { timeoutMs: PRE_DELETION_WAIT_MS },
      );
      if (!reply.ok)
        this.logger.warn(`pre-connection-deletion scripts failed, deleting anyway: ${reply.message}`);
    } catch (error) {
      this.logger.warn(
        `pre-connection-deletion scripts not run, deleting anyway: ${(error as Error).message}`,
      );
    }
  }

  @NatsHandler(CONNECTIONS_API_REQUESTS.import)
  async import(req: ImportConnectionRequest): Promise<ApiPublicConnectionFull> {
    const imported = await this.importer.execute(req);
    this.changes.announce(req.caller.environmentId, req.body.provider_config_key);
    return imported;
  }

  @NatsHandler(CONNECTIONS_API_REQUESTS.setMetadata)
  async setMetadata(req: ConnectionMetadataRequest): Promise<{ success: true }> {
    await this.writeMetadata(req, 'replace');
    return { success: true };
  }

  @NatsHandler(CONNECTIONS_API_REQUESTS.updateMetadata)
  async updateMetadata(req: ConnectionMetadataRequest): Promise<{ success: true }> {
    await this.writeMetadata(req, 'merge');
    return { success: true };
  }

  private async writeMetadata(req: ConnectionMetadataRequest, mode: 'replace' | 'merge'): Promise<void> {
    const { connection_id: ids, provider_config_key: providerConfigKey, metadata } = req.body;
    const list = Array.isArray(ids) ? ids : [ids];
    const missing = await this.repository.writeMetadata(
      req.caller.environmentId,
      providerConfigKey,
      list,
      metadata,
      mode,
    );
    this.changes.announce(req.caller.environmentId, providerConfigKey);
    if (missing.length > 0) {
      const which = missing.map((id) => `"${id}"`).join(', ');
      throw new VaultError(
        'unknown_connection',
        `No connection ${which} for integration "${providerConfigKey}"${list.length > 1 ? '; no metadata was written to any of the connections' : ''}`,
      );
    }
  }

  /** Nango tells an unknown integration (`unknown_provider_config`) apart from an unknown connection (`not_found`). */
  private async missing(caller: Caller, providerConfigKey: string): Promise<SwitchboardError> {
    try {
      await this.nats.call(INTEGRATION_REQUESTS.get, {
        caller,
        uniqueKey: providerConfigKey,
        include: { webhook: false, credentials: false },
      });
    } catch (error) {
      if (
        error instanceof SwitchboardError &&
        (error.code === 'not_found' || error.code === 'unknown_provider_config')
      ) {
        return new VaultError('unknown_provider_config', `Integration "${providerConfigKey}" does not exist`);
      }
    }
    return new VaultError('not_found', 'No connection with this id for this integration');
  }
}
