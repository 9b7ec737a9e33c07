import { Inject, Injectable } from '@nestjs/common';
import { VAULT_SUBJECTS, type ConnectionsChanged } from '@switchboard/contracts';
import { NATS_CONNECTION } from '@switchboard/messaging';
import type { NatsConnection } from 'nats';

/**
 * Announces that an integration's connections changed (created, overridden, patched, deleted, metadata),
 * so services that cache routing or credentials drop those entries now instead of at their TTL. A
 * broadcast on core NATS: best effort by design, the TTLs still bound staleness if one is missed.
 */
@Injectable()
export class ConnectionChanges {
  constructor(@Inject(NATS_CONNECTION) private readonly nc: NatsConnection) {}

  announce(environmentId: number, providerConfigKey: string): void {
    const change: ConnectionsChanged = { environmentId, providerConfigKey };
    try {
      this.nc.publish(VAULT_SUBJECTS.changed, JSON.stringify(change));
    } catch {
      // Connection closing: the caches expire on their own.
    }
  }
}
