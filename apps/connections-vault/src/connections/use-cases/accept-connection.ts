import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  authEventSchema,
  EVENT_SUBJECTS,
  ON_EVENT_REQUESTS,
  type Caller,
  type ValidateConnectionRequest,
} from '@switchboard/contracts';
import { NATS_CONNECTION, NatsRequester, publishEvent } from '@switchboard/messaging';
import type { NatsConnection } from 'nats';
import { VAULT_ENV, type VaultEnv } from '../../config/env';
import { VaultError } from '../../vault.errors';
import { ConnectionsRepository, type ConnectionRow } from '../connections.repository';
import { StoreConnection, type StoreInput } from './store-connection';

/** Beyond the scripts' own budget: the runtime's abort grace, loading and answering. */
export const VALIDATION_MARGIN_MS = 5_000;

export interface AcceptInput extends StoreInput {
  /** Whose environment's validate-connection scripts judge the credentials. */
  caller: Caller;
  /** As the caller knows it (a connect flow's reconnect); else found from the stored connection. */
  operation?: 'creation' | 'override' | undefined;
  /**
   * A refused reconnect also sends a failed `override` auth webhook (a connect flow, as in Nango); an
   * import's caller is the customer's backend, which learns it from the answer alone.
   */
  announceRefusedOverride: boolean;
}

/**
 * Validate, then store: the integration's validate-connection scripts (deployed functions, run by the
 * orchestrator, which answers at once when there are none) accept or refuse the candidate credentials
 * before anything is stored. A refusal answers `connection_validation_failed` with the script's reason
 * and stores nothing: a refused reconnect leaves the stored connection as it was. Fail-closed: without a
 * verdict (orchestrator down or too slow) nothing is stored, since a check that could not run is not a
 * check that passed. Used when a connect flow finishes and by the public import.
 */
@Injectable()
export class AcceptConnection {
  private readonly logger = new Logger('AcceptConnection');

  constructor(
    private readonly nats: NatsRequester,
    private readonly store: StoreConnection,
    private readonly repository: ConnectionsRepository,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(VAULT_ENV) private readonly env: VaultEnv,
  ) {}

  async execute(input: AcceptInput): Promise<{ row: ConnectionRow; operation: 'creation' | 'override' }> {
    const existing = await this.repository.findByKey(input.key);
    const operation = input.operation ?? (existing ? 'override' : 'creation');
    const request: ValidateConnectionRequest = {
      caller: input.caller,
      providerConfigKey: input.key.providerConfigKey,
      connectionId: input.key.connectionId,
      provider: input.provider,
      operation,
      // The metadata the connection will have once stored: the one given, else the current one.
      candidate: {
        credentials: input.credentials,
        connectionConfig: input.connectionConfig,
        metadata:
          input.metadata ?? (existing?.metadata as Record<string, unknown> | null | undefined) ?? null,
      },
    };
    const verdict = await this.nats.call(ON_EVENT_REQUESTS.validateConnection, request, {
      timeoutMs: this.env.SWITCHBOARD_ON_EVENT_TIMEOUT_MS + VALIDATION_MARGIN_MS,
    });
    if (!verdict.ok) {
      const message = verdict.message ?? 'Connection failed validation';
      if (operation === 'override' && input.announceRefusedOverride)
        await this.refusedOverride(input, message);
      throw new VaultError('connection_validation_failed', message);
    }
    return this.store.execute(input);
  }

  /** The stored connection keeps its previous credentials, since the refused ones were never stored. */
  private async refusedOverride(input: AcceptInput, description: string): Promise<void> {
    const id = randomUUID();
    const event = authEventSchema.parse({
      id,
      environmentId: input.key.environmentId,
      connectionId: input.key.connectionId,
      providerConfigKey: input.key.providerConfigKey,
      provider: input.provider,
      operation: 'override',
      success: false,
      tags: input.tags ?? {},
      endUser: input.endUser ?? null,
      webhookUrlOverride: input.webhookUrlOverride ?? null,
      error: { type: 'connection_validation_failed', description },
      occurredAt: new Date().toISOString(),
    });
    try {
      await publishEvent(this.nc, EVENT_SUBJECTS.auth, id, event);
    } catch (error) {
      // The end user still learns why; only the customer's webhook is lost, and that is logged.
      this.logger.error(
        `the failed-reconnect webhook of ${input.key.providerConfigKey}/${input.key.connectionId} was not published: ${(error as Error).message}`,
      );
    }
  }
}
